"""Sign-ins of the coding app that survive a reload of the page, without the token in the URL.

A reload opens a new Streamlit session, which starts without the tab's sign-in. At sign-in
the server hands the browser a random session secret in a cookie (no expiry date: it lives
as long as the browser session, path /, SameSite=Strict) and the store keeps only the
secret's sha256, tied to the annotator's token hash and an expiry
(``Store.open_browser_session``). The next session of that browser, on this app server or
any other of the same store, reads the cookie from the request that opened it
(``st.context.cookies``) and signs in with the secret itself, which the store accepts in
place of the token until it expires, the person signs out, or their token is rotated or
revoked. The personal token never reaches the browser's storage or the URL, and the store
keeps hashes only, as before.
"""

from __future__ import annotations

import streamlit as st

from annotate import Store
from samples import InputError

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


class BrowserSessions:
    """The server's side of the reload-proof sign-in, kept in the study's store."""

    def __init__(self, store: Store, *, lifetime_s: float = LIFETIME_S) -> None:
        if not lifetime_s > 0:
            raise ValueError(f"lifetime_s {lifetime_s!r}: expected a number of seconds > 0")
        self._store = store
        self._lifetime_s = lifetime_s

    def open(self, token: str) -> str:
        """A new secret for the browser that signed in with ``token``."""
        return self._store.open_browser_session(token, lifetime_s=self._lifetime_s)

    def credential(self, secret: object) -> str | None:
        """The secret as the tab's credential when it still signs in; None if unknown, closed or expired,
        or not a secret at all (a session without a request, as under AppTest, has no cookies)."""
        if not isinstance(secret, str) or not secret:
            return None
        return secret if self._store.browser_session_valid(secret) else None

    def close(self, secret: str | None) -> None:
        if secret:
            try:
                self._store.close_browser_session(secret)
            except InputError:
                pass  # nothing to forget


def keep_cookie(secret: str | None) -> None:
    """Draw the cookie component: the browser holds ``secret``, or no cookie when None."""
    SESSION_COOKIE(key="accord-session-cookie", data={"name": COOKIE, "value": secret or ""})
