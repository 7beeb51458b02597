import logging

from presentation_dependence.secrets import RedactingFilter, redact


def test_redact_replaces_secret_env_values():
    env = {"HF_TOKEN": "hf_abcdef123456", "OPENAI_API_KEY": "sk-zzzzzzzz", "HOME": "/root/home"}
    text = "token hf_abcdef123456 and key sk-zzzzzzzz in /root/home"
    out = redact(text, env)
    assert "hf_abcdef123456" not in out and "sk-zzzzzzzz" not in out
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
