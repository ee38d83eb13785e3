"""The password rule (``PasswordPolicy``): length, the offline breach list, account words, guessability.

Most cases call the policy directly (it is a pure rule with no external system); the registration
route shows the 400 a person gets. Timing is measured in bench/passwords/, not asserted here.
"""

from __future__ import annotations

import random
import string
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from agent_server.accounts.breach import account_words, assess, breach_list
from agent_server.accounts.password_policy import PasswordPolicy
from agent_server.foundation.errors import ValidationFailed
from agent_server.foundation.settings import Settings
from agent_server.gateway.passwords import verify_password
from http_facade.app import create_app
from tests.conftest import BASE_URL, running

BREACHED = [
    "password1234",
    "qwerty123456",
    "iloveyou12345",
    "Summer2024!!",
    "passwordpassword",
    "123456789012",
    "PASSWORD1234",
    "P@ssw0rd2024!",  # look-alike symbols
    "drowssap1234",  # reversed
    "Password!Password!",  # repeated with a symbol
    "trustno1trustno1",
    "monkey19851231",  # a date
    "football2023",
    "Dragon_123456",
    "sunshine20242024",
    "1q2w3e4r5t6y",  # keyboard pattern on the list as it is
    "letmein!!2024",
]
GUESSABLE = ["monkeydragon12", "abcdefghijkl", "aaaaaaaaaaaa", "qwertyuiopasdf", "zxcvbnmasdfgh"]
STRONG = [
    "correct horse battery staple",
    "violet-harbour-lantern-42",
    "river-candle-oak-meadow",
    "Tr0ub4dor&3-xylophone",
]
MAKEFILE_ADMIN = ["admin@agentgate.example", "Demo"]  # the bootstrap's words for `make run`


@pytest.fixture
def policy(tmp_path: Path) -> PasswordPolicy:
    return PasswordPolicy(Settings(data_dir=tmp_path, redis_url=None, database_url=None))


async def refusal(policy: PasswordPolicy, password: str, *words: str) -> ValidationFailed:
    with pytest.raises(ValidationFailed) as refused:
        await policy.check(password, user_inputs=words)
    assert refused.value.param == "password" and refused.value.http_status == 400
    return refused.value


@pytest.mark.parametrize("password", BREACHED)
async def test_breached_passwords_and_predictable_changes_are_refused(
    policy: PasswordPolicy, password: str
) -> None:
    error = await refusal(policy, password, "ann@acme.example", "Acme")
    assert error.code == "password_breached"
    assert "leaked in data breaches" in error.message and "Choose another" in error.message


@pytest.mark.parametrize("password", GUESSABLE)
async def test_easily_guessed_passwords_are_refused(policy: PasswordPolicy, password: str) -> None:
    error = await refusal(policy, password)
    assert error.code == "password_too_guessable" and "too easy to guess" in error.message


async def test_the_accounts_own_words_are_refused_only_for_that_account(policy: PasswordPolicy) -> None:
    error = await refusal(policy, "acmecorp2024!", "ann@acmecorp.example", "Acme Corp")
    assert error.code == "password_too_guessable" and "your own details" in error.message
    await policy.check("acmecorp2024!", user_inputs=["ann@globex.example", "Globex"])  # not theirs
    assert (await refusal(policy, "Ann.Smith@Acme.example", "ann.smith@acme.example")).code == (
        "password_too_guessable"
    )
    # The service's name counts as the account's words without being passed.
    assert (await refusal(policy, "Agentgate-2024!!")).code == "password_too_guessable"


@pytest.mark.parametrize("password", STRONG)
async def test_passphrases_pass(policy: PasswordPolicy, password: str) -> None:
    await policy.check(password, user_inputs=["ann@acme.example", "Acme"])


async def test_the_published_demo_password_is_refused_for_everyone(policy: PasswordPolicy) -> None:
    """The README and the Makefile publish it: refused with any account's words, and changed
    predictably too (only sandbox mode's bootstrap admin takes it as it is: test_password_paths.py)."""
    for password in ("agentgate-demo-password", "Agentgate-Demo-Password!", "AGENTGATE-DEMO-PASSWORD2024"):
        for words in (MAKEFILE_ADMIN, ["ann@globex.example", "Globex"], []):
            error = await refusal(policy, password, *words)
            assert error.code == "password_breached" and "demo password" in error.message


async def test_the_products_name_and_the_organisations_words_joined_are_refused(
    policy: PasswordPolicy,
) -> None:
    acme = ["ann@acme.example", "Acme Corp"]
    for password in (
        "agentgate-acme-corp",
        "Acme.Corp.Agentgate",
        "acme corp 2024 agentgate",
        "AgentG4te_Acme_2024",
    ):
        error = await refusal(policy, password, *acme)
        assert error.code == "password_too_guessable" and "joined by punctuation" in error.message
    await policy.check("agentgate-acme-corp", user_inputs=["ann@globex.example", "Globex"])  # not theirs
    await policy.check("acme-violet-harbour-lantern", user_inputs=acme)  # other words in it


async def test_the_test_passwords_pass_with_their_accounts_words(policy: PasswordPolicy) -> None:
    await policy.check("demo-admin-password", user_inputs=["admin@demo.example", "Demo"])
    await policy.check("scale-test-admin-password", user_inputs=["ops@scale.example", "Demo"])


async def test_random_16_character_strings_pass(policy: PasswordPolicy) -> None:
    rng = random.Random(11)
    alphabets = [
        string.ascii_letters + string.digits,
        string.ascii_letters + string.digits + string.punctuation,
    ]
    for alphabet in alphabets:
        for _ in range(100):
            await policy.check("".join(rng.choice(alphabet) for _ in range(16)), user_inputs=MAKEFILE_ADMIN)


async def test_length_bounds_count_characters_then_bytes(policy: PasswordPolicy) -> None:
    short = await refusal(policy, "Xk9#mP2$vL7")  # 11 characters
    assert short.code == "password_too_short" and "at least 12 characters" in short.message
    await policy.check("Xk9#mP2$vL7@")  # 12
    await policy.check("ĳø€ŧ→ßðđŋħĸł")  # 12 characters, 27 bytes
    rng = random.Random(5)
    longest = "".join(rng.choice(string.ascii_letters) for _ in range(1024))
    await policy.check(longest)  # 1024 bytes: judged on its start, its end is not re-read
    too_long = await refusal(policy, longest + "x")
    assert too_long.code == "password_too_long" and "1024 bytes" in too_long.message
    assert (await refusal(policy, "é" * 513)).code == "password_too_long"  # 513 characters, 1026 bytes


async def test_long_weak_passwords_are_still_refused(policy: PasswordPolicy) -> None:
    assert (await refusal(policy, "password" * 128)).code == "password_breached"  # 1024 bytes
    assert (await refusal(policy, "ab" * 400 + "1")).code == "password_too_guessable"
    substitutions = "4@8({[<3691!|70$5+%2"  # zxcvbn's slowest kind of input, bounded by the policy
    await policy.check(substitutions * 50)


def test_the_offline_list_is_zxcvbns_30000_leaked_passwords() -> None:
    listed = breach_list()
    assert len(listed) == 30_000 and listed["123456"] == 1 and listed["password"] == 2
    words = account_words(["ann@acme.example"])
    long_enough = [word for word in listed if len(word) >= 12]
    assert len(long_enough) > 200
    assert all(assess(word, words) == "breached" for word in long_enough)
    sample = random.Random(3).sample([word for word in listed if word.isalpha() and len(word) >= 6], 300)
    assert all(assess(word.capitalize() + "2024!", words) == "breached" for word in sample)


def test_account_words_split_addresses_and_names() -> None:
    words = account_words(["Ann.Smith@Acme-Corp.example", "Acme Corp", "agentgate", "x"])
    for expected in ("ann.smith@acme-corp.example", "ann.smith", "acme-corp.example", "smith", "acmecorp"):
        assert expected in words
    assert "x" not in words


async def test_hash_new_hashes_only_an_accepted_password(policy: PasswordPolicy) -> None:
    stored = await policy.hash_new("violet-harbour-lantern-42")
    assert stored.startswith("$argon2id$") and await verify_password(stored, "violet-harbour-lantern-42")
    with pytest.raises(ValidationFailed):
        await policy.hash_new("password1234")


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    settings = Settings(
        data_dir=tmp_path,
        public_base_url=BASE_URL,
        redis_url=None,
        database_url=None,
        register_limit_per_email=100,
    )
    async with (
        running(create_app(settings)) as app,
        httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE_URL) as c,
    ):
        yield c


async def test_registration_answers_a_400_that_says_what_to_do(client: httpx.AsyncClient) -> None:
    body = {"email": "ann@acmecorp.example", "organisation": "Acme Corp", "plan": "starter"}
    expected = {
        "Summer2024!!": "PASSWORD_BREACHED",
        "acmecorp2024!": "PASSWORD_TOO_GUESSABLE",
        "monkeydragon12": "PASSWORD_TOO_GUESSABLE",
        "short-pass1": "PASSWORD_TOO_SHORT",
        "agentgate-demo-password": "PASSWORD_BREACHED",
        "acme-corp-agentgate": "PASSWORD_TOO_GUESSABLE",
    }
    for password, code in expected.items():
        answer = await client.post("/register", json={**body, "password": password})
        assert answer.status_code == 400, answer.text
        error = answer.json()["error"]
        assert (error["code"], error["param"]) == (code, "password")
        assert "Choose another" in error["message"] or "at least 12 characters" in error["message"]
        assert password not in answer.text
    accepted = await client.post("/register", json={**body, "password": "violet-harbour-lantern-42"})
    assert accepted.status_code == 202, accepted.text


def test_digits_and_symbols_are_not_read_as_listed_words_by_chance() -> None:
    # Read as letters, these would hold listed words (|7(475 reads "itcats"); a short listed number
    # inside a longer number is chance. Substitutions count only in what is at least half letters.
    for password in ("192|7(475$$9$", "|%<$+4(@7$86", "51|3@69418[!", "936|4|!7+[%2"):
        assert assess(password) is None, password
    assert assess("2024" + "73918206") is None  # 2024 is listed, but under 6 digits
    assert assess("P@55w0rd2024!") == "breached"  # P@55w0rd is half letters: read back
