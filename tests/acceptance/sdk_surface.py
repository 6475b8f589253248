"""The Python SDK's surface, found by introspection, and its async twins held to the
requests of the sync methods the acceptance tests call.

``sdk_methods()`` lists every public method of ``resend`` (each class reachable from the
module, nested ones too — ``Contacts.Imports`` is ``ContactImports`` — a method counted
once whatever its aliases). ``Twins`` wraps each sync method that has an ``_async`` twin:
while a test runs against ``serve``, every call records its arguments and the HTTP
exchanges it made; afterwards each recorded call is made again through its twin, whose
HTTP client answers what the server answered, and the twin must send the very same
requests (method, URL, JSON body, form fields, file names) and end the same way. So a
sync method tested against mailbridge vouches for its async twin, which builds its
request with code of its own.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import resend
from resend.http_client import HTTPClient
from resend.http_client_async import AsyncHTTPClient


@dataclass(frozen=True)
class Method:
    owner: type
    name: str
    names: tuple[str, ...]  # every dotted name it is reachable by, e.g. ("Contacts.Imports.get",)


def _classes(root: Any, prefix: str, seen: set[int]) -> Iterator[tuple[str, type]]:
    for name in sorted(dir(root)):
        if name.startswith("_"):
            continue
        member = getattr(root, name)
        if inspect.isclass(member) and member.__module__.startswith("resend."):
            dotted = f"{prefix}{name}"
            yield dotted, member
            if id(member) not in seen:
                seen.add(id(member))
                yield from _classes(member, dotted + ".", seen)


def sdk_methods() -> list[Method]:
    """Every public class or static method of the SDK's resource classes, once each."""
    found: dict[Any, Method] = {}
    for dotted, owner in _classes(resend, "", set()):
        for name in dir(owner):
            raw = inspect.getattr_static(owner, name)  # from the class or a base class
            if name.startswith("_") or not isinstance(raw, classmethod | staticmethod):
                continue
            key = raw.__func__
            known = found.get(key)
            names = (*(known.names if known else ()), f"{dotted}.{name}")
            found[key] = Method(known.owner if known else owner, name, names)
    return sorted(found.values(), key=lambda method: method.names[0])


Answer = tuple[bytes, int, Mapping[str, str]]


@dataclass
class Exchange:
    request: tuple[Any, ...]
    answer: Answer


def _request(method: str, url: str, json: Any, files: Any, data: Any) -> tuple[Any, ...]:
    names = sorted(files) if isinstance(files, dict) else files
    return (method.lower(), url, json, names, data)


class _Recording(HTTPClient):
    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.exchanges: list[Exchange] = []

    def request(
        self, method: str, url: str, headers: Mapping[str, str], json: Any = None,
        files: Any = None, data: Any = None,
    ) -> Answer:  # fmt: skip
        request = _request(method, url, copy.deepcopy(json), files, copy.deepcopy(data))
        answer = self.inner.request(method, url, headers, json, files, data)
        self.exchanges.append(Exchange(request, answer))
        return answer  # type: ignore[no-any-return]


class _Replaying(AsyncHTTPClient):
    def __init__(self, exchanges: list[Exchange]) -> None:
        self.answers = [exchange.answer for exchange in exchanges]
        self.requests: list[tuple[Any, ...]] = []

    async def request(
        self, method: str, url: str, headers: Mapping[str, str], json: Any = None,
        files: Any = None, data: Any = None,
    ) -> Answer:  # fmt: skip
        self.requests.append(_request(method, url, json, files, data))
        if not self.answers:
            return b'{"message": "the sync twin made no such request"}', 599, {}
        return self.answers.pop(0)


@dataclass
class Call:
    method: Method
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    exchanges: list[Exchange] = field(default_factory=list)
    failure: type[BaseException] | None = None


class Twins:
    """Install on the SDK for one test; ``check()`` replays its calls through the twins."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self._restore: list[Callable[[], None]] = []
        self._recording: _Recording | None = None

    def install(self) -> None:
        recording = self._recording = _Recording(resend.default_http_client)
        resend.default_http_client = recording
        for method in sdk_methods():
            if method.name.endswith("_async") or not hasattr(method.owner, method.name + "_async"):
                continue
            raw = inspect.getattr_static(method.owner, method.name)
            self._wrap(method, raw, recording)

    def _wrap(self, method: Method, raw: Any, recording: _Recording) -> None:
        function = raw.__func__
        is_class = isinstance(raw, classmethod)
        calls = self.calls

        def recorded(*args: Any, **kwargs: Any) -> Any:
            call = Call(method, copy.deepcopy(args[1:] if is_class else args),
                        copy.deepcopy(kwargs))  # fmt: skip
            before = len(recording.exchanges)
            try:
                return function(*args, **kwargs)
            except Exception as exc:
                call.failure = type(exc)
                raise
            finally:
                call.exchanges = recording.exchanges[before:]
                calls.append(call)

        wrapped = classmethod(recorded) if is_class else staticmethod(recorded)
        owner = next(klass for klass in method.owner.__mro__ if method.name in vars(klass))
        setattr(owner, method.name, wrapped)
        self._restore.append(lambda: setattr(owner, method.name, raw))

    def uninstall(self) -> None:
        for restore in reversed(self._restore):
            restore()
        self._restore.clear()
        if self._recording is not None:
            resend.default_http_client = self._recording.inner

    def check(self) -> list[str]:
        """What each twin did otherwise than its sync method (empty: all the same)."""
        problems: list[str] = []
        saved = resend.default_async_http_client
        try:
            for call in self.calls:
                if not call.exchanges:
                    continue  # refused by the SDK before any request (its own checks)
                replaying = _Replaying(call.exchanges)
                resend.default_async_http_client = replaying
                twin = getattr(call.method.owner, call.method.name + "_async")
                failure: type[BaseException] | None = None
                try:
                    with warnings.catch_warnings():  # the sync call's own were the test's
                        warnings.simplefilter("ignore", DeprecationWarning)
                        asyncio.run(twin(*call.args, **call.kwargs))
                except Exception as exc:
                    failure = type(exc)
                sent = [exchange.request for exchange in call.exchanges]
                name = call.method.names[0]
                if replaying.requests != sent:
                    problems.append(f"{name}_async sent {replaying.requests}; {name}: {sent}")
                if failure is not call.failure:
                    problems.append(
                        f"{name}_async ended with {failure}; {name} with {call.failure}"
                    )
        finally:
            resend.default_async_http_client = saved
        return problems
