"""Google's side of the credentials around the Play Developer API, for google_play_standin.py.

- The service account Gatehouse calls the API as: an RSA key pair made at start-up and the key file in
  Google's format (type, project_id, private_key_id, private_key, client_email, client_id, token_uri, ...),
  whose token_uri is the stand-in's own OAuth token endpoint.
- That token endpoint's rules for the JWT bearer grant (RFC 7523, as Google's server-to-server OAuth uses
  it): an RS256 assertion signed by the service account's key (kid, when given, is its private_key_id), iss
  the account's email, aud the key file's token_uri or Google's token endpoint URL (which Google's own
  libraries always send, and which is the token_uri of a real key file), a space-separated scope that
  includes the androidpublisher scope, iat and exp no more than an hour apart and around now. Each accepted
  assertion gives an opaque access token for an hour.
- Google's key server for Pub/Sub push authentication: a JWKS like https://www.googleapis.com/oauth2/v3/certs
  and OIDC tokens signed as Pub/Sub signs a push (RS256, iss https://accounts.google.com, aud, email,
  email_verified, sub, azp, iat, exp, kid), with any claim overridable and other signers (a foreign key,
  none, HS256 keyed with the public key) for the negative tests.

All times come from the caller (the stand-in's clock), never from the libraries' own clocks."""
import base64
import hashlib
import hmac
import json
import secrets
import urllib.parse

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

GRANT_TYPE = "urn:ietf:params:oauth:grant-type:jwt-bearer"
# The audience Google's own client libraries always put in the assertion, whatever the key file's token_uri
# (google-auth's service_account module); in production the key file's token_uri is this same URL.
GOOGLE_TOKEN_ENDPOINT = "https://oauth2.googleapis.com/token"
GOOGLE_ISSUER = "https://accounts.google.com"
ASSERTION_LIFETIME = 3600  # Google refuses an assertion whose exp is more than an hour after its iat
ACCESS_TOKEN_LIFETIME = 3600
CLOCK_SKEW = 300  # how far an assertion's iat may run ahead of the stand-in's clock


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_int(number):
    return b64url(number.to_bytes((number.bit_length() + 7) // 8, "big"))


class Key:
    """An RSA key pair with a key id; `jwk` is its public half as Google's certs endpoint lists it."""

    def __init__(self, kid=None):
        self.kid = kid or secrets.token_hex(20)
        self.private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.public = self.private.public_key()

    @property
    def private_pem(self):
        return self.private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()).decode()

    @property
    def public_pem(self):
        return self.public.public_bytes(serialization.Encoding.PEM,
                                        serialization.PublicFormat.SubjectPublicKeyInfo).decode()

    @property
    def jwk(self):
        numbers = self.public.public_numbers()
        return {"kty": "RSA", "alg": "RS256", "use": "sig", "kid": self.kid, "n": b64url_int(numbers.n),
                "e": b64url_int(numbers.e)}

    def sign(self, claims, headers=None):
        return jwt.encode(claims, self.private, algorithm="RS256", headers={"kid": self.kid, **(headers or {})})


class Refused(Exception):
    """A token request the endpoint refuses: the OAuth error code and Google-style description, and the
    HTTP status (400, or 401 for an unknown client)."""

    def __init__(self, error, description, status=400):
        super().__init__(description)
        self.error, self.description, self.status = error, description, status


class ServiceAccount:
    """The service account Gatehouse is configured with, and its key file in Google's format."""

    def __init__(self, project_id, name="gatehouse-play"):
        self.project_id = project_id
        self.email = f"{name}@{project_id}.iam.gserviceaccount.com"
        self.client_id = str(100000000000000000000 + secrets.randbelow(10 ** 20))
        self.key = Key()

    def key_file(self, token_uri):
        return {
            "type": "service_account",
            "project_id": self.project_id,
            "private_key_id": self.key.kid,
            "private_key": self.key.private_pem,
            "client_email": self.email,
            "client_id": self.client_id,
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": token_uri,
            "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
            "client_x509_cert_url": "https://www.googleapis.com/robot/v1/metadata/x509/"
                                    + urllib.parse.quote(self.email, safe=""),
            "universe_domain": "googleapis.com",
        }


def check_grant(form, account, token_uri, required_scope, now):
    """The claims of a JWT bearer grant's assertion, if the token endpoint accepts it; raises Refused.
    `form` is the parsed request body {name: [values]}."""
    def single(name):
        values = form.get(name, [])
        if len(values) > 1:
            raise Refused("invalid_request", f"The parameter {name} is given more than once.")
        return values[0] if values else None

    grant_type = single("grant_type")
    if grant_type is None:
        raise Refused("invalid_request", "Missing required parameter: grant_type")
    if grant_type != GRANT_TYPE:
        raise Refused("unsupported_grant_type", f"Invalid grant_type: {grant_type}")
    unknown = sorted(set(form) - {"grant_type", "assertion"})
    if unknown:
        raise Refused("invalid_request", f"Unexpected parameters for the JWT bearer grant: {', '.join(unknown)}")
    assertion = single("assertion")
    if not assertion:
        raise Refused("invalid_request", "Missing required parameter: assertion")
    try:
        header = jwt.get_unverified_header(assertion)
    except jwt.InvalidTokenError:
        raise Refused("invalid_grant", "Invalid JWT: the assertion is not a JWT.")
    if header.get("alg") != "RS256":
        raise Refused("invalid_grant", f"Invalid JWT: the algorithm is {header.get('alg')!r}, not RS256.")
    if "kid" in header and header["kid"] != account.key.kid:
        raise Refused("invalid_grant", "Invalid JWT Signature.")  # a key id this account does not have
    try:
        claims = jwt.decode(assertion, account.key.public, algorithms=["RS256"],
                            options={"verify_exp": False, "verify_iat": False, "verify_nbf": False,
                                     "verify_aud": False, "verify_iss": False})
    except jwt.InvalidSignatureError:
        raise Refused("invalid_grant", "Invalid JWT Signature.")
    except jwt.InvalidTokenError as error:
        raise Refused("invalid_grant", f"Invalid JWT: {error}")
    if claims.get("iss") != account.email:
        raise Refused("invalid_client", "The OAuth client was not found.", 401)
    if "sub" in claims and claims["sub"] != account.email:
        raise Refused("unauthorized_client", "Client is unauthorized to retrieve access tokens using this method, "
                      "or client not authorized for any of the scopes requested.")
    if claims.get("aud") not in (token_uri, GOOGLE_TOKEN_ENDPOINT):
        raise Refused("invalid_grant", f"Invalid JWT: the audience is {claims.get('aud')!r}, not the token "
                      f"endpoint ({token_uri} or {GOOGLE_TOKEN_ENDPOINT}).")
    iat, exp = claims.get("iat"), claims.get("exp")
    if not all(isinstance(t, (int, float)) and not isinstance(t, bool) for t in (iat, exp)):
        raise Refused("invalid_grant", "Invalid JWT: iat and exp must be numbers.")
    if exp <= iat or exp - iat > ASSERTION_LIFETIME or iat > now + CLOCK_SKEW or exp < now:
        raise Refused("invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a "
                      "reasonable timeframe. Check your iat and exp values in the JWT claim.")
    scope = claims.get("scope")
    if not isinstance(scope, str) or not scope.split():
        raise Refused("invalid_scope", "Invalid JWT: the scope claim is missing or empty.")
    if required_scope not in scope.split(" "):
        raise Refused("invalid_scope", f"The assertion's scope ({scope}) does not include {required_scope}.")
    return claims


class AccessTokens:
    """The access tokens the endpoint has issued: opaque strings, each with its account, scopes and expiry.
    Callers hold the stand-in's lock."""

    def __init__(self):
        self.tokens = {}

    def issue(self, email, scopes, now):
        token = "ya29.standin-" + secrets.token_urlsafe(48)
        self.tokens[token] = {"email": email, "scopes": scopes, "expires": now + ACCESS_TOKEN_LIFETIME}
        return token, ACCESS_TOKEN_LIFETIME - 1  # Google answers expires_in 3599 for an hour

    def find(self, token, now):
        """The token's record if it was issued and has not expired, else None."""
        record = self.tokens.get(token)
        return record if record and record["expires"] > now else None

    def expire_all(self):
        count = len(self.tokens)
        for record in self.tokens.values():
            record["expires"] = 0
        return count


class PushSigner:
    """Google's signing keys for push tokens. `keys[0]` signs; every key in `keys` is listed in the JWKS,
    as Google lists the current and the next (or previous) key. `foreign` is a key Google does not have."""

    def __init__(self, email):
        self.email = email
        self.subject = str(100000000000000000000 + secrets.randbelow(10 ** 20))
        self.keys = [Key(), Key()]
        self.retired = []
        self.foreign = Key()

    def jwks(self):
        return {"keys": [key.jwk for key in self.keys]}

    def rotate(self, keep_old):
        """A new signing key; the old one stays listed when `keep_old`, else it is retired (no longer
        listed, as after Google's rotation has completed)."""
        old = self.keys[0]
        self.keys = [Key()] + (self.keys if keep_old else self.keys[1:])
        if not keep_old:
            self.retired.append(old)
        return {"kid": self.keys[0].kid, "retired": None if keep_old else old.kid}

    def mint(self, options, audience, now):
        """A push's OIDC token. Options (all optional): audience, email, email_verified, issuer, subject,
        issued_at, expires_at, expires_in, remove [claim names], claims {more claims}, signer ("google",
        "next" (the second listed key), "retired", "foreign", "none", "hs256"), kid (the header's kid;
        a foreign signature keeps the current Google kid unless this says otherwise), typ."""
        issued = options.get("issued_at", now)
        claims = {
            "aud": options.get("audience", audience),
            "azp": options.get("subject", self.subject),
            "email": options.get("email", self.email),
            "email_verified": options.get("email_verified", True),
            "exp": options.get("expires_at", issued + options.get("expires_in", 3600)),
            "iat": issued,
            "iss": options.get("issuer", GOOGLE_ISSUER),
            "sub": options.get("subject", self.subject),
        }
        claims.update(options.get("claims", {}))
        for name in options.get("remove", []):
            claims.pop(name, None)
        claims = {k: int(v) if isinstance(v, float) else v for k, v in claims.items()}
        signer = options.get("signer", "google")
        current_kid = self.keys[0].kid
        header = {"typ": options.get("typ", "JWT")}
        if signer == "none":
            header.update({"alg": "none", "kid": options.get("kid", current_kid)})
            token = f"{b64url(json.dumps(header).encode())}.{b64url(json.dumps(claims).encode())}."
        elif signer == "hs256":  # the algorithm confusion attack: HMAC keyed with Google's public key
            header.update({"alg": "HS256", "kid": options.get("kid", current_kid)})
            signing_input = f"{b64url(json.dumps(header).encode())}.{b64url(json.dumps(claims).encode())}"
            mac = hmac.new(self.keys[0].public_pem.encode(), signing_input.encode(), hashlib.sha256).digest()
            token = f"{signing_input}.{b64url(mac)}"
        else:
            keys = {"google": self.keys[0], "next": self.keys[-1], "foreign": self.foreign,
                    "retired": self.retired[-1] if self.retired else None}
            if signer not in keys:
                raise ValueError(f"signer {signer!r} is not one of {sorted(keys) + ['hs256', 'none']}")
            key = keys[signer]
            if key is None:
                raise ValueError("no key has been retired yet (rotate the push keys first)")
            kid = options.get("kid", current_kid if signer == "foreign" else key.kid)
            token = jwt.encode(claims, key.private, algorithm="RS256", headers={**header, "kid": kid})
        return {"token": token, "authorization": f"Bearer {token}", "claims": claims,
                "header": jwt.get_unverified_header(token) if signer != "none" else header}
