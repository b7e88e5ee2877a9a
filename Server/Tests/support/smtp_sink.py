"""A real SMTP server for Gatehouse's tests (aiosmtpd): stores every message it accepts in a
maildir, optionally requires STARTTLS and AUTH. Prints READY when it listens; stops when its
standard input closes."""
import argparse
import ssl
import sys

from aiosmtpd.controller import Controller
from aiosmtpd.handlers import Mailbox
from aiosmtpd.smtp import AuthResult, LoginPassword


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--maildir", required=True)
    parser.add_argument("--tls-cert")
    parser.add_argument("--tls-key")
    parser.add_argument("--user")
    parser.add_argument("--password")
    options = parser.parse_args()

    def authenticate(server, session, envelope, mechanism, auth_data):
        ok = (isinstance(auth_data, LoginPassword)
              and auth_data.login.decode() == options.user
              and auth_data.password.decode() == options.password)
        return AuthResult(success=ok)

    kwargs = {}
    if options.tls_cert:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(options.tls_cert, options.tls_key)
        kwargs.update(tls_context=context, require_starttls=True)
    if options.user:
        kwargs.update(authenticator=authenticate, auth_required=True, auth_require_tls=bool(options.tls_cert))
    controller = Controller(Mailbox(options.maildir), hostname="127.0.0.1", port=options.port, **kwargs)
    controller.start()
    print("READY", flush=True)
    sys.stdin.read()
    controller.stop()


if __name__ == "__main__":
    main()
