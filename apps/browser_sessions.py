"""Sign-ins of the coding app that survive a reload of the page, without the token in the URL.

A reload opens a new Streamlit session, which starts without the tab's sign-in. At sign-in
the server hands the browser a random session secret in a cookie (no expiry date: it lives
as long as the browser session, path /, SameSite=Strict) and keeps only the secret's
sha256 in memory, mapped to the signed-in token and an expiry. The next session of that
browser reads the cookie from the request that opened it (``st.context.cookies``) and, if
the secret's hash is known and not expired, is signed in again; the token itself is then
checked against the store as on every run (a revoked token still signs the tab out). The
personal token never reaches the browser's storage or the URL, and the store keeps token
hashes only, as before. Sign-out forgets the secret; a server restart forgets them all
(people sign in again).
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time

import streamlit as st

COOKIE = "accord_session"
# A working day, so a tab left open overnight asks for the token again.
LIFETIME_S = 12 * 3600.0

# Sets or clears the cookie in the browser (the only part of the sign-in done there).
_COOKIE_JS = """
export default function ({ data }) {
  const prefix = `${data.name}=`;
  const found = document.cookie.split("; ").find((item) => item.startsWith(prefix));
  const have = found ? decodeURIComponent(found.slice(prefix.length)) : "";
  if (have === data.value) return;
  document.cookie = data.value
    ? `${prefix}${encodeURIComponent(data.value)}; path=/; SameSite=Strict`
    : `${prefix}; path=/; SameSite=Strict; max-age=0`;
}
"""
SESSION_COOKIE = st.components.v2.component("accord_session_cookie", js=_COOKIE_JS)


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


class BrowserSessions:
    """The server's side of the reload-proof sign-in: hash of a browser's secret -> (token, expiry)."""

    def __init__(self, *, lifetime_s: float = LIFETIME_S, clock=time.monotonic) -> None:
        if not lifetime_s > 0:
            raise ValueError(f"lifetime_s {lifetime_s!r}: expected a number of seconds > 0")
        self._lifetime_s = lifetime_s
        self._clock = clock
        self._sessions: dict[str, tuple[str, float]] = {}
        self._lock = threading.Lock()

    def open(self, token: str) -> str:
        """A new secret for the browser that signed in with ``token``."""
        secret = secrets.token_urlsafe(32)
        now = self._clock()
        with self._lock:
            self._sessions = {key: value for key, value in self._sessions.items() if value[1] > now}
            self._sessions[_digest(secret)] = (token, now + self._lifetime_s)
        return secret

    def token(self, secret: object) -> str | None:
        """The token a browser's secret stands for; None if unknown, forgotten or expired, or
        not a secret at all (a session without a request, as under AppTest, has no cookies)."""
        if not isinstance(secret, str) or not secret:
            return None
        with self._lock:
            found = self._sessions.get(_digest(secret))
        return found[0] if found is not None and found[1] > self._clock() else None

    def close(self, secret: str | None) -> None:
        if secret:
            with self._lock:
                self._sessions.pop(_digest(secret), None)


def keep_cookie(secret: str | None) -> None:
    """Draw the cookie component: the browser holds ``secret``, or no cookie when None."""
    SESSION_COOKIE(key="accord-session-cookie", data={"name": COOKIE, "value": secret or ""})
