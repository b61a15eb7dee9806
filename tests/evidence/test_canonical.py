"""Canonical JSON and digests: round trips, key-order independence, rejections."""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rungbench.errors import InputError
from rungbench.evidence.canonical import (
    DIGEST_SCHEME,
    bytes_digest,
    canonical_bytes,
    digest,
    is_canonical,
    is_digest,
    loads_canonical,
    parse_digest,
    scheme_record,
)

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values: st.SearchStrategy[Any] = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5)
    ),
    max_leaves=25,
)


@given(json_values)
def test_round_trip(value: Any) -> None:
    """Parsing canonical bytes gives back an equal value, and re-encoding gives the same bytes."""
    data = canonical_bytes(value)
    back = loads_canonical(data)
    assert back == value
    assert canonical_bytes(back) == data
    assert is_canonical(data)


@given(st.dictionaries(st.text(max_size=8), json_values, min_size=2, max_size=6), st.randoms())
def test_digest_ignores_key_order(mapping: dict[str, Any], random: Any) -> None:
    """Two dicts with the same items in any insertion order have the same digest."""
    items = list(mapping.items())
    random.shuffle(items)
    assert digest(dict(items)) == digest(mapping)


def test_known_bytes_and_digest() -> None:
    """The byte form is sorted, compact and UTF-8; the digest is sha256 of exactly those bytes."""
    value = {"b": [1, 2.5, None], "a": "é", "c": {"z": True, "y": False}}
    expected = '{"a":"é","b":[1,2.5,null],"c":{"y":false,"z":true}}'.encode()
    assert canonical_bytes(value) == expected
    assert digest(value) == "sha256:" + hashlib.sha256(expected).hexdigest()


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_rejected(bad: float) -> None:
    """NaN and infinities raise InputError naming the field where they sit."""
    with pytest.raises(InputError, match=r"non-finite.*'x\.y\[1\]'"):
        canonical_bytes({"x": {"y": [0, bad]}})


@pytest.mark.parametrize("key", [1, 2.5, None, True, (1, 2)])
def test_non_string_keys_rejected(key: Any) -> None:
    """A dict key that is not a string is an InputError, never silently coerced."""
    with pytest.raises(InputError, match="non-string key"):
        canonical_bytes({key: 1})


def test_unsupported_types_and_lone_surrogates_rejected() -> None:
    """Sets, bytes and strings with lone surrogates are InputErrors."""
    for bad in ({1, 2}, b"raw", "\udcff"):
        with pytest.raises(InputError):
            canonical_bytes({"v": bad})


def test_loads_rejects_nan_duplicates_and_garbage() -> None:
    """Parsing refuses NaN constants, duplicate keys and non-JSON, naming the path."""
    for text in (b'{"a": NaN}', b'{"a":1,"a":2}', b'{"a":', b"\xff\xfe"):
        with pytest.raises(InputError, match=r"^f\.json: not valid JSON"):
            loads_canonical(text, path="f.json")


def test_is_canonical_detects_whitespace_and_order() -> None:
    """Equivalent but non-canonical JSON text is recognised as not canonical."""
    assert is_canonical(b'{"a":1,"b":2}')
    assert not is_canonical(b'{"b":2,"a":1}')
    assert not is_canonical(b'{"a": 1}')
    assert not is_canonical(b"not json")


@given(st.binary(max_size=64))
def test_bytes_digest_is_sha256(data: bytes) -> None:
    """bytes_digest is sha256:<hex> of the raw bytes and always well formed."""
    found = bytes_digest(data)
    assert found == "sha256:" + hashlib.sha256(data).hexdigest()
    assert is_digest(found)
    assert parse_digest(found) == found[7:]


@pytest.mark.parametrize(
    "text",
    ["", "sha256:", "sha256:" + "A" * 64, "sha256:" + "a" * 63, "md5:" + "a" * 64, "a" * 64],
)
def test_malformed_digest_rejected(text: str) -> None:
    """parse_digest raises InputError naming the field and the bad value."""
    with pytest.raises(InputError, match=r"malformed digest.*\(field 'x'\)"):
        parse_digest(text, field="x")


def test_scheme_record_is_versioned_and_canonical() -> None:
    """The scheme record names the current scheme and is itself canonical JSON."""
    record = scheme_record()
    assert record["scheme"] == DIGEST_SCHEME == "rungbench-canonical-json/1"
    assert json.loads(canonical_bytes(record)) == record
