"""The TRL adapter against the installed TRL: the release is a tested one and the extension points the
adapter uses are TRL's (a full GRPOTrainer run with the monitor on and off is tests/monitor/test_trl.py)."""

from __future__ import annotations

import inspect

import pytest

trl = pytest.importorskip("trl", reason="TRL is not importable here")


def test_the_installed_trl_is_a_tested_release_and_passes_the_reward_kwargs_the_adapter_reads():
    from collapse_probe.integrations.monitor._adapters import check_version

    assert check_version("trl") is None, check_version("trl")
    source = inspect.getsource(trl.GRPOTrainer)
    # monitor_reward_func reads trainer_state (the step) and calls log_metric (TRL's metric logging)
    assert 'reward_kwargs["trainer_state"]' in source and 'reward_kwargs["log_metric"]' in source
    assert "environment_factory" in inspect.signature(trl.GRPOTrainer.__init__).parameters


def test_the_callback_is_a_transformers_trainer_callback():
    import transformers

    from collapse_probe.integrations.monitor import CollapseMonitor
    from collapse_probe.integrations.monitor.trl import CollapseMonitorCallback

    cb = CollapseMonitorCallback(CollapseMonitor(partition="exact"), stop_on_alarm=True)
    assert isinstance(cb, transformers.TrainerCallback)
    control = transformers.TrainerControl()
    assert cb.on_step_end(None, None, control) is control and not control.should_training_stop
