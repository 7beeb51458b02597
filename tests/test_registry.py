import pytest

from presentation_dependence.errors import RegistryError
from presentation_dependence.registry import Registry
from presentation_dependence.rerankers import RERANKERS


def test_register_and_get():
    reg: Registry[type] = Registry("thing")

    @reg.register()
    class Alpha:
        pass

    assert reg.get("Alpha") is Alpha
    assert "Alpha" in reg and reg.names() == ["Alpha"]


def test_duplicate_name_rejected():
    reg: Registry[type] = Registry("thing")

    @reg.register("x")
    class A:
        pass

    with pytest.raises(RegistryError, match="already registered"):

        @reg.register("x")
        class B:
            pass


def test_unknown_name_suggests_close_matches():
    with pytest.raises(RegistryError) as e:
        RERANKERS.get("IdentityRerankr")
    assert "Did you mean 'IdentityReranker'" in str(e.value)


def test_builtin_rerankers_registered():
    assert "IdentityReranker" in RERANKERS
