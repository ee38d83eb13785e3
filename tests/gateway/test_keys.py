"""The API key format (spec 2.1): 48 characters, base62, a checksum that refuses noise offline."""

from __future__ import annotations

import random

from agent_server.gateway import keys


def test_a_new_key_has_the_spec_format() -> None:
    for environment, prefix in (("test", "sk_test_"), ("live", "sk_live_")):
        full, body = keys.generate(environment)
        assert len(full) == 48 and full.startswith(prefix) and full == prefix + body
        assert all(c in keys.ALPHABET for c in body)
        assert keys.parse(full) == (environment, body)


def test_every_single_character_change_fails_the_checksum() -> None:
    full, _ = keys.generate("test")
    for position in range(8, len(full)):
        for replacement in random.Random(position).sample(keys.ALPHABET, 8):
            if replacement != full[position]:
                mutated = full[:position] + replacement + full[position + 1 :]
                assert keys.parse(mutated) is None, mutated


def test_the_quickstart_spelling_names_the_same_key() -> None:
    _, body = keys.generate("live")
    assert keys.parse("sk-agentgate-" + body) == (None, body)
    assert keys.parse("sk-otherword-" + body) is None


def test_malformed_keys_are_refused() -> None:
    full, body = keys.generate("test")
    for raw in (
        "",
        "sk_test_",
        full[:-1],
        full + "A",
        "pk_test_" + body,
        "sk_test_" + body[:-1] + "!",
        "x" * 48,
    ):
        assert keys.parse(raw) is None, raw


def test_random_noise_never_passes() -> None:
    rng = random.Random(7)
    noise = ("sk_test_" + "".join(rng.choice(keys.ALPHABET) for _ in range(40)) for _ in range(5_000))
    assert sum(keys.parse(candidate) is not None for candidate in noise) == 0


def test_the_digest_is_sha256_hex_of_the_body() -> None:
    _, body = keys.generate("test")
    assert len(keys.digest(body)) == 64 and body not in keys.digest(body)
