import logging
import sys

from presentation_dependence.secrets import (
    RedactingFilter,
    RedactingFormatter,
    find_secret,
    redact,
    redact_obj,
    secret_values,
)


def test_redact_replaces_secret_env_values():
    env = {"HF_TOKEN": "hf_abcdef123456", "OPENAI_API_KEY": "sk-zzzzzzzz01", "HOME": "/root/home"}
    text = "token hf_abcdef123456 and key sk-zzzzzzzz01 in /root/home"
    out = redact(text, env)
    assert "hf_abcdef123456" not in out and "sk-zzzzzzzz01" not in out
    assert "<redacted:HF_TOKEN>" in out and "/root/home" in out


def test_short_values_are_not_redacted():
    assert redact("a 1 b", {"SOME_KEY": "1"}) == "a 1 b"


def test_logging_filter(monkeypatch, caplog):
    monkeypatch.setenv("MY_SECRET", "very-secret-value")
    logger = logging.getLogger("presentation_dependence.test_secrets")
    logger.addFilter(RedactingFilter())
    with caplog.at_level(logging.INFO):
        logger.info("value=%s", "very-secret-value")
    assert "very-secret-value" not in caplog.text
    assert "<redacted:MY_SECRET>" in caplog.text


def test_identifier_values_are_not_credentials():
    """Issue 16 (7): only credential-looking values of secret-named variables are redacted."""
    env = {
        "MY_KEYRING_PROVIDER": "smoke-1",  # KEY inside another word: not a secret name
        "SOME_TOKEN": "smoke-1",  # a secret name, but an ordinary short value
        "TOKENIZERS_PARALLELISM": "false",
        "SSH_KEY_PATH": "/home/user/.ssh/id_ed25519",  # a path is not a credential
    }
    text = "qid smoke-1 parallel false key at /home/user/.ssh/id_ed25519"
    assert redact(text, env) == text
    assert secret_values(env) == {}


def test_credentials_are_found_by_name_part_and_shape():
    env = {"HF_TOKEN": "hf_SENTINEL_0123456789", "AWS_SECRET_ACCESS_KEY": "abcDEF123456ghiJKL"}
    assert secret_values(env) == {
        "hf_SENTINEL_0123456789": "HF_TOKEN",
        "abcDEF123456ghiJKL": "AWS_SECRET_ACCESS_KEY",
    }


def test_redact_obj_and_find_secret():
    env = {"HF_TOKEN": "hf_SENTINEL_0123456789"}
    obj = {"a": ["x hf_SENTINEL_0123456789", 3], "b": {"c": "hf_SENTINEL_0123456789"}}
    assert redact_obj(obj, env) == {
        "a": ["x <redacted:HF_TOKEN>", 3],
        "b": {"c": "<redacted:HF_TOKEN>"},
    }
    assert find_secret("no secret here", env) is None
    assert find_secret("leak hf_SENTINEL_0123456789", env) == "HF_TOKEN"


def test_redacting_formatter_covers_tracebacks(monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_SENTINEL_0123456789")
    try:
        raise RuntimeError("failed with hf_SENTINEL_0123456789")
    except RuntimeError:
        record = logging.LogRecord("x", logging.ERROR, "f", 1, "boom", None, sys.exc_info())
    text = RedactingFormatter("%(message)s").format(record)
    assert "Traceback" in text and "<redacted:HF_TOKEN>" in text
    assert "hf_SENTINEL_0123456789" not in text
