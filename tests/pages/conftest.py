"""Fixtures of the page tests: the app on a ManualClock, a browser-like and a program-like client."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI

from agent_server.foundation.clock import ManualClock
from agent_server.foundation.settings import Settings
from http_facade.app import create_app
from tests.conftest import BASE_URL, running

# What Chromium sends for a navigation.
BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"
BROWSER_UA = "Mozilla/5.0 (X11; Linux x86_64) pages-test"


@pytest.fixture
async def pages_app(settings: Settings, clock: ManualClock) -> AsyncIterator[FastAPI]:
    async with running(create_app(settings, clock=clock)) as app:
        yield app


def client_of(app: FastAPI, ip: str = "10.0.0.1", **headers: str) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app, client=(ip, 5555))
    return httpx.AsyncClient(transport=transport, base_url=BASE_URL, headers=headers)


@pytest.fixture
async def browser(pages_app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with client_of(pages_app, Accept=BROWSER_ACCEPT, **{"User-Agent": BROWSER_UA}) as client:
        yield client


@pytest.fixture
async def program(pages_app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with client_of(pages_app) as client:  # httpx sends Accept: */*
        yield client
