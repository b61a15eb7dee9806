"""Tests for rungbench.agents.spec and rungbench.agents.models_file: one way to name an agent."""

from __future__ import annotations

from pathlib import Path

import pytest

from rungbench.agents.models_file import load_models, models_toml, parse_models
from rungbench.agents.spec import (
    DEFAULT_API_KEY_ENV,
    AgentSpec,
    Pricing,
    label_for,
    parse_agent,
)
from rungbench.errors import InputError

MODELS = """
[models.my-model]
model = "vendor/Model-7B-Instruct"
base_url = "http://127.0.0.1:8000/v1"
api_key_env = "MY_KEY"
timeout_s = 30
usd_per_mtok_in = 0.5
usd_per_mtok_out = 1.5

[models.my-model.params]
temperature = 0
max_tokens = 256
seed = 7
reasoning_effort = "low"
stop = ["\\n\\n"]

[models.local]
model = "llama"
base_url = "http://127.0.0.1:8001/v1"
no_api_key = true

[models.planted-diffuse]
kind = "planted"
model = "e023:diffuse"
seed = 3
"""


def test_label_and_endpoint_model_are_kept_apart() -> None:
    """A models-file entry's label is what results say; its model is what is sent."""
    models = parse_models(MODELS, source="m.toml")
    spec = models.get("my-model")
    assert (spec.label, spec.kind, spec.model) == ("my-model", "openai",
                                                   "vendor/Model-7B-Instruct")
    assert spec.api_key_env == "MY_KEY" and spec.timeout_s == 30
    assert spec.params == {"temperature": 0, "max_tokens": 256, "seed": 7,
                           "reasoning_effort": "low", "stop": ["\n\n"]}
    assert spec.pricing == Pricing(0.5, 1.5)
    assert models.labels == ("my-model", "local", "planted-diffuse")


def test_a_keyless_endpoint_names_no_key_variable() -> None:
    """``no_api_key = true`` records ``api_key_env: null``; an endpoint that names none reads
    the default variable."""
    models = parse_models(MODELS, source="m.toml")
    assert models.get("local").keyless and models.get("local").api_key_env is None
    assert models.get("local").to_json()["api_key_env"] is None
    default = parse_agent("openai:x", base_url="http://h/v1")
    assert default.api_key_env == DEFAULT_API_KEY_ENV and not default.keyless


def test_the_digest_ignores_comments_and_order_and_holds_no_key(monkeypatch: pytest.MonkeyPatch,
                                                                 ) -> None:
    """The file's digest is of its specs: comments and key order do not change it, a
    parameter does, and no key value is in what it covers."""
    monkeypatch.setenv("MY_KEY", "sk-very-secret-value-123")
    first = parse_models(MODELS, source="a.toml")
    reordered = MODELS.replace('timeout_s = 30\n', '').replace(
        'api_key_env = "MY_KEY"\n', 'api_key_env = "MY_KEY"  # the key\ntimeout_s = 30\n')
    assert parse_models(reordered, source="b.toml").digest() == first.digest()
    changed = parse_models(MODELS.replace("temperature = 0", "temperature = 0.7"), source="c")
    assert changed.digest() != first.digest()
    assert "sk-very-secret" not in str(first.to_json())


def test_models_toml_reads_back_to_the_same_specs(tmp_path: Path) -> None:
    """:func:`models_toml` writes a file that parses to the same specs (same digest)."""
    models = parse_models(MODELS, source="m.toml")
    path = tmp_path / "again.toml"
    path.write_text(models_toml(models.specs), encoding="utf-8")
    assert load_models(path).digest() == models.digest()


@pytest.mark.parametrize(("entry", "field"), [
    ('model = "m"\nbase_url = "http://h/v1"\ntemprature = 0\n', "models.x.temprature"),
    ('model = "m"\nbase_url = "ftp://h/v1"\n', "models.x.base_url"),
    ('model = "m"\n', "models.x.base_url"),
    ('base_url = "http://h/v1"\n', "models.x.model"),
    ('model = "m"\nbase_url = "http://h/v1"\n[models.x.params]\ntemperature = 3\n',
     "models.x.params.temperature"),
    ('model = "m"\nbase_url = "http://h/v1"\n[models.x.params]\nmessages = []\n',
     "models.x.params.messages"),
    ('model = "m"\nbase_url = "http://h/v1"\napi_key_env = "K"\nno_api_key = true\n',
     "models.x.no_api_key"),
    ('kind = "planted"\nmodel = "e023:sharp"\nbase_url = "http://h/v1"\n', "models.x.base_url"),
    ('kind = "human"\nmodel = "me"\n', "models.x.kind"),
    ('model = "m"\nbase_url = "http://h/v1"\ntimeout_s = -1\n', "models.x.timeout_s"),
    ('model = "m"\nbase_url = "http://h/v1"\nusd_per_mtok_in = -1\n',
     "models.x.usd_per_mtok_in"),
])
def test_a_bad_entry_is_refused_naming_its_field(entry: str, field: str) -> None:
    """Every key is checked; a misspelt, mistyped or out-of-range one is an error naming the
    file and the dotted field."""
    with pytest.raises(InputError) as caught:
        parse_models(f"[models.x]\n{entry}", source="bad.toml")
    assert caught.value.field == field and caught.value.path == "bad.toml"


def test_an_unknown_label_lists_the_known_ones() -> None:
    """Asking a models file for a label it lacks names both."""
    with pytest.raises(InputError, match=r"no agent labelled 'nope' in m\.toml .*my-model"):
        parse_models(MODELS, source="m.toml").get("nope")


@pytest.mark.parametrize("label", ["", "a:b", "a/b", "-x", "x" * 65, "with space"])
def test_a_label_must_be_safe_in_a_file_name(label: str) -> None:
    """Labels are 1-64 safe characters with no ':' (which marks ``kind:name``)."""
    with pytest.raises(InputError):
        AgentSpec(label, "openai", "m", base_url="http://h/v1")


def test_a_one_off_spec_takes_its_label_from_the_model_id() -> None:
    """``openai:vendor/Model`` is labelled ``vendor-Model``; ``--label`` overrides it."""
    assert label_for("meta-llama/Llama-3.1-8B") == "meta-llama-Llama-3.1-8B"
    spec = parse_agent("openai:meta-llama/Llama-3.1-8B", base_url="http://h/v1")
    assert spec.label == "meta-llama-Llama-3.1-8B" and spec.model == "meta-llama/Llama-3.1-8B"
    assert parse_agent("openai:m", label="mine", base_url="http://h/v1").label == "mine"
    assert parse_agent("planted:e020:ideas_limited").label == "planted-e020-ideas_limited"


@pytest.mark.parametrize("text", ["gpt-4o", "openai:", "human:me", ":x"])
def test_a_spec_text_that_is_no_spec_is_refused(text: str) -> None:
    """Only ``openai:MODEL``, ``planted:NAME`` and ``reference:NAME`` are specs."""
    with pytest.raises(InputError, match="openai:MODEL, planted:NAME or reference:NAME"):
        parse_agent(text)


def test_a_stand_in_agent_carries_registered_prices() -> None:
    """A reference or planted entry may register the prices it stands in for: they reach the
    spec, its JSON (only when set, so unpriced specs keep their digest) and read back from
    models_toml; an endpoint key on such an entry is still refused."""
    text = ('[models.p2]\nkind = "reference"\nmodel = "p2_protocol"\n'
            'usd_per_mtok_in = 0.15\nusd_per_mtok_out = 0.6\n')
    spec = parse_models(text, source="m.toml").get("p2")
    assert spec.pricing == Pricing(0.15, 0.6)
    assert spec.to_json()["pricing"] == {"usd_per_mtok_in": 0.15, "usd_per_mtok_out": 0.6}
    assert parse_models(models_toml([spec]), source="again").get("p2") == spec
    unpriced = parse_agent("reference:p2_protocol")
    assert "pricing" not in unpriced.to_json()
    assert parse_agent("reference:p2_protocol", pricing=Pricing(0.15, 0.6)).pricing == \
        Pricing(0.15, 0.6)
    with pytest.raises(InputError, match="base_url"):
        parse_models(text + 'base_url = "http://h/v1"\n', source="m.toml")
