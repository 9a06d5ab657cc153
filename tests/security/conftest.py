import pytest

# What would let the machine's own settings pick the engine, key or approval mode of a test run.
ENGINE_ENV = ("CLOVER_ENDPOINT", "OPENAI_BASE_URL", "CLOVER_API_KEY", "OPENAI_API_KEY", "CLOVER_MODEL",
              "CLOVER_APPROVAL")


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    """No engine settings from the environment, and a user config folder of the test's own."""
    for var in ENGINE_ENV:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
