from __future__ import annotations

from storage_core.config import BROKER_KEYS, TOPIC_KEYS
from storage_core.config_names import FREE_FORM_BROKER_PREFIXES, OTHER_BROKER_KEYS, OTHER_TOPIC_KEYS

INTERPRETED_BROKER_KEYS = {s.key for spec in TOPIC_KEYS.values() for s in spec.synonyms} | set(BROKER_KEYS)


def test_ignored_names_never_shadow_an_interpreted_one() -> None:
    assert not OTHER_TOPIC_KEYS & set(TOPIC_KEYS)
    assert not OTHER_BROKER_KEYS & INTERPRETED_BROKER_KEYS


def test_free_form_families_stay_out_of_the_namespaces_we_read() -> None:
    """A typo in a key we interpret must never be swallowed by a family accepted whole."""
    for prefix in FREE_FORM_BROKER_PREFIXES:
        assert not prefix.startswith(("log.", "message.", "compression.")), prefix
        assert not any(key.startswith(prefix) for key in INTERPRETED_BROKER_KEYS), prefix
        assert not any(key.startswith(prefix) for key in OTHER_BROKER_KEYS), prefix
