"""make_engine: engines by name; an option an engine does not take is refused, by name."""

import pytest

from clover_code.engine import EngineError, make_engine
from clover_code.engine.scripted import ScriptedEngine
from clover_code.engine.wire.remote import RemoteEngine


def test_known_options_build_the_engine():
    engine = make_engine("scripted", replies=["hi"], block_size=4)
    assert isinstance(engine, ScriptedEngine) and engine.block_size == 4


@pytest.mark.parametrize("name, options", [
    ("scripted", {"replies": [], "blok_size": 4}),
    ("remote", {"endpoint": "http://localhost:1/v1", "idle_timout": 5}),
    ("embedded", {"model": "/nowhere", "treshold": 0.9}),  # refused before any loading
])
def test_a_misspelt_option_is_an_error_naming_it(name, options):
    typo = next(k for k in options if k not in ("replies", "endpoint", "model"))
    with pytest.raises(EngineError, match=f"the {name} engine has no option '{typo}'; it takes: .*"):
        make_engine(name, **options)


def test_constructors_take_no_unknown_keywords():
    with pytest.raises(TypeError, match="blok_size"):
        ScriptedEngine([], blok_size=4)
    with pytest.raises(TypeError, match="idle_timout"):
        RemoteEngine("http://localhost:1/v1", idle_timout=5)


def test_an_unknown_engine_names_the_known_ones():
    with pytest.raises(EngineError, match="choose one of: embedded, remote, scripted"):
        make_engine("nope")
