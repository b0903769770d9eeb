"""Credentials an SDK reads by itself, and the HTTP Basic form of URL credentials, are secrets of the
process: scrubbed from what is printed or written (:mod:`collapse_probe.core._secrets`)."""

from __future__ import annotations

import base64

import pytest

from collapse_probe.core._secrets import forget_secrets, redact_url, scrub


@pytest.fixture(autouse=True)
def _fresh_secrets():
    forget_secrets()
    yield
    forget_secrets()


def test_url_credentials_are_scrubbed_in_their_basic_auth_form():
    redact_url("http://alice-ops:sk-pass%2B9f8e7d@127.0.0.1:8000/v1")
    for pair in ("alice-ops:sk-pass%2B9f8e7d", "alice-ops:sk-pass+9f8e7d"):
        token = base64.b64encode(pair.encode()).decode()
        assert scrub(f"401: bad header 'Basic {token}'") == "401: bad header 'Basic ***'"
        assert "***" in scrub(base64.urlsafe_b64encode(pair.encode()).decode())


def test_azure_entra_token_is_a_secret(monkeypatch):
    pytest.importorskip("openai")
    from collapse_probe.models.openai import make_azure_model

    token = "eyJ0eXAi-entra-token-5d4c3b2a"
    monkeypatch.delenv("AZURE_OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("AZURE_OPENAI_AD_TOKEN", token)
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", "https://res.openai.azure.com")
    assert token in scrub(f"echo {token}")  # not known before the backend is built
    make_azure_model("azure/dep", "dep")
    assert scrub(f"echo {token}") == "echo ***"


def test_bedrock_aws_credentials_are_secrets(monkeypatch):
    pytest.importorskip("anthropic")
    from collapse_probe.models.anthropic import make_bedrock_model

    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI-K7MDENG-bPxRfiCY")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "FwoGZXIvYXdzEJr-session-77")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    make_bedrock_model("bedrock/anthropic.claude", "anthropic.claude")
    assert scrub("a wJalrXUtnFEMI-K7MDENG-bPxRfiCY b FwoGZXIvYXdzEJr-session-77") == "a *** b ***"


def test_a_key_pasted_into_api_key_env_is_refused_without_showing_it(monkeypatch):
    pytest.importorskip("openai")
    from collapse_probe.errors import ConfigError
    from collapse_probe.models.openai import make_openai_compatible_model

    pasted = "sk-live-pasted-7c6b5a49"
    with pytest.raises(ConfigError, match="expected the name of an environment variable") as err:
        make_openai_compatible_model("openai-compatible/m", "m", base_url="http://127.0.0.1:9/v1", api_key_env=pasted)
    assert pasted not in str(err.value)
    assert scrub(f"echo {pasted}") == "echo ***"  # and kept out of whatever prints the option later


def test_an_api_key_env_that_is_not_set_is_an_error_not_a_keyless_run(monkeypatch):
    pytest.importorskip("openai")
    from collapse_probe.errors import ConfigError
    from collapse_probe.models.openai import make_openai_compatible_model

    monkeypatch.delenv("MY_SERVER_KEY", raising=False)
    with pytest.raises(ConfigError, match=r"set the environment variable \$MY_SERVER_KEY"):
        make_openai_compatible_model(
            "openai-compatible/m", "m", base_url="http://127.0.0.1:9/v1", api_key_env="MY_SERVER_KEY"
        )
    monkeypatch.setenv("MY_SERVER_KEY", "sk-server-key-112233")
    model = make_openai_compatible_model(
        "openai-compatible/m", "m", base_url="http://127.0.0.1:9/v1", api_key_env="MY_SERVER_KEY"
    )
    assert model.api_key_env == "MY_SERVER_KEY"
