"""Shared fixtures. Every test opens DDS sockets: run them in a private network namespace,
as scripts/test does: `scripts/netns-run VENV/bin/python -m pytest bindings/python/tests`."""

import itertools
import os

import pytest

import tessera

_names = itertools.count()


def pytest_configure(config):
    if os.environ.get("TESSERA_IN_NETNS") != "1":
        pytest.exit("these tests send DDS traffic: run them under scripts/netns-run", returncode=2)


@pytest.fixture(scope="session")
def participant():
    return tessera.DomainParticipant(domain_id=0)


@pytest.fixture
def topic_name(request):
    """A topic name no other test uses."""
    return f"py_{request.node.name[:40]}_{next(_names)}"
