import minstats


def test_mean_median():
    assert minstats.mean([1, 2, 3, 6]) == 3
    assert minstats.median([3, 1, 2]) == 2
    assert minstats.median([4, 1, 2, 3]) == 2.5
