"""The Google Play Developer API as Google describes it, for google_play_standin.py: the androidpublisher v3
discovery document that the pinned google-api-python-client package ships
(googleapiclient/discovery_cache/documents/androidpublisher.v3.json, found through the installed module).

`Discovery.resolve` names the method a request calls (its HTTP method and path against every method's
path template, `{name}` and `{+name}` expansions and `:verb` suffixes resolved as Google's HTTP rules do,
a `{+name}` value checked against the parameter's pattern); `check_query` and `check_body` check the query
parameters (the method's and the document's global ones, with their types, formats and enums) and the
JSON body (the method's request schema: types, formats, enums, and no field the schema does not name);
`check_response` checks what the stand-in is about to answer against the method's response schema, more
strictly (the types Google itself writes: int64 as a string, int32 as a number, RFC 3339 times in UTC).

Whatever the document does not describe raises Undescribed; the stand-in answers it in Google's error
shape and records it as a violation, so a test fails on any request Gatehouse should not have sent."""
import base64
import binascii
import json
import os
import re
import urllib.parse
from importlib.metadata import PackageNotFoundError, version

PACKAGE = "google-api-python-client"
DOCUMENT = ("discovery_cache", "documents", "androidpublisher.v3.json")
INT32 = (-2 ** 31, 2 ** 31 - 1)
UINT32 = (0, 2 ** 32 - 1)
INT64 = (-2 ** 63, 2 ** 63 - 1)
DIGITS = re.compile(r"-?[0-9]+")
RFC3339 = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?(Z|[+-][0-9]{2}:[0-9]{2})")
DURATION = re.compile(r"-?[0-9]+(\.[0-9]{1,9})?s")
FIELD_MASK = re.compile(r"[A-Za-z0-9_.,]*")


class Undescribed(Exception):
    """A request the document does not describe: `status` is what Google's front end would answer (404 for a
    path and method no method has, 400 for a parameter or body that does not fit the method), or 501 for a
    described path the stand-in does not serve (batch, media upload)."""

    def __init__(self, status, reason, where=None):
        super().__init__(reason)
        self.status, self.reason, self.where = status, reason, where


def document_path():
    """Where the installed googleapiclient keeps the androidpublisher v3 document (not a copy of ours)."""
    import googleapiclient  # imported here so that a missing package is one clear error at start-up
    return os.path.join(os.path.dirname(googleapiclient.__file__), *DOCUMENT)


def client_version():
    try:
        return version(PACKAGE)
    except PackageNotFoundError:
        return None


class Method:
    """One method of the document with its path template compiled: `pattern` matches the request path
    (still percent-encoded, less any `:verb`), `verb` is the custom verb after the template's last colon."""

    def __init__(self, description, root):
        self.id = description["id"]
        self.http_method = description["httpMethod"]
        self.description = description
        self.parameters = description.get("parameters", {})
        self.request = description.get("request", {}).get("$ref")
        self.response = description.get("response", {}).get("$ref")
        self.template = root + description["path"]
        self.pattern, self.verb, self.variables, self.literal_length = compile_template(self.template)


def compile_template(template):
    """A path template into (regex, verb, [(group, parameter, reserved)], literal length). `{name}` is a
    simple expansion: one percent-encoded segment, no raw `/`. `{+name}` is a reserved expansion and may
    span segments (its parameter's `pattern` narrows it later). The verb is whatever follows a colon in the
    last segment, outside any braces."""
    verb = None
    last = template.rsplit("/", 1)[-1]
    outside = re.sub(r"\{[^}]*\}", "", last)
    if ":" in outside:
        template, verb = template.rsplit(":", 1)
    regex, variables, literal = "", [], 0
    for index, part in enumerate(re.split(r"(\{\+?[A-Za-z0-9_.]+\})", template)):
        if part.startswith("{"):
            reserved = part.startswith("{+")
            name = part.strip("{+}")
            group = f"v{index}"
            regex += f"(?P<{group}>.+)" if reserved else f"(?P<{group}>[^/]+)"
            variables.append((group, name, reserved))
        else:
            regex += re.escape(part)
            literal += len(part)
    return re.compile(regex), verb, variables, literal


def split_verb(path):
    """A request path into (path, verb): a raw colon in the last segment starts a custom verb (a simple
    expansion would have encoded a colon in a value as %3A)."""
    head, _, last = path.rpartition("/")
    if ":" in last:
        last, verb = last.rsplit(":", 1)
        return f"{head}/{last}", verb
    return path, None


class Discovery:
    """The document and its methods, with the checks the stand-in makes on every request and answer."""

    def __init__(self, path=None):
        self.path = path or document_path()
        with open(self.path) as file:
            self.document = json.load(file)
        self.client_version = client_version()
        self.revision = self.document.get("revision")
        self.schemas = self.document["schemas"]
        self.globals = self.document.get("parameters", {})
        self.scopes = sorted(self.document.get("auth", {}).get("oauth2", {}).get("scopes", {}))
        root = urllib.parse.urlparse(self.document["rootUrl"]).path + self.document.get("servicePath", "")
        self.methods = {}
        self._walk(self.document.get("resources", {}), root)
        # The batch endpoint and the media upload paths are described too (the stand-in serves neither).
        self.batch_path = root + self.document["batchPath"] if self.document.get("batchPath") else None
        self.uploads = []  # (pattern, verb) of each media upload path
        for method in self.methods.values():
            for protocol in method.description.get("mediaUpload", {}).get("protocols", {}).values():
                pattern, verb, _, _ = compile_template(protocol["path"])
                self.uploads.append((pattern, verb))

    def _walk(self, resources, root):
        for resource in resources.values():
            for description in resource.get("methods", {}).values():
                self.methods[description["id"]] = Method(description, root)
            self._walk(resource.get("resources", {}), root)

    # Which method a request calls

    def resolve(self, http_method, raw_path):
        """(Method, {parameter: decoded value}) for a request path (percent-encoded, without the query);
        raises Undescribed when no method of the document has this HTTP method and path."""
        path, verb = split_verb(raw_path)
        candidates = []
        for method in self.methods.values():
            if method.verb != verb:
                continue
            match = method.pattern.fullmatch(path)
            if not match:
                continue
            values = self._path_values(method, match)
            if values is not None:
                candidates.append((method, values))
        if not candidates:
            if raw_path == self.batch_path or any(pattern.fullmatch(path) and upload_verb == verb
                                                  for pattern, upload_verb in self.uploads):
                raise Undescribed(501, f"{http_method} {raw_path} is a media upload or batch path: described, "
                                  "but the stand-in serves neither")
            raise Undescribed(404, f"no method of the androidpublisher v3 document has the path {raw_path}")
        allowed = [(m, v) for m, v in candidates if m.http_method == http_method]
        if not allowed:
            known = sorted({f"{m.http_method} ({m.id})" for m, _ in candidates})
            raise Undescribed(404, f"{http_method} is not a method on {raw_path}: the document has {', '.join(known)}")
        # The most specific template wins (more literal text, as a literal segment beats a variable).
        return max(allowed, key=lambda pair: pair[0].literal_length)

    def _path_values(self, method, match):
        """The decoded path parameters, or None when a value breaks its parameter's pattern or type."""
        values = {}
        for group, name, reserved in method.variables:
            raw = match.group(group)
            value = urllib.parse.unquote(raw)
            if value == "" or (not reserved and "/" in raw):
                return None
            parameter = method.parameters.get(name, {})
            if parameter.get("pattern") and not re.search(parameter["pattern"], value):
                return None
            try:
                check_parameter(value, parameter, name)
            except Undescribed:
                return None
            values[name] = value
        return values

    # The request's query and body

    def check_query(self, method, query):
        """{name: value or [values]} for a query string whose every parameter the method or the document's
        global parameters declare, each of its type, given once unless repeated; raises Undescribed."""
        try:
            pairs = urllib.parse.parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query),
                                           errors="strict")
        except (ValueError, UnicodeDecodeError) as error:
            raise Undescribed(400, f"the query string does not parse: {error}")
        values = {}
        for name, value in pairs:
            parameter = method.parameters.get(name) or self.globals.get(name)
            if parameter is None or parameter.get("location") != "query":
                raise Undescribed(400, f"{method.id} has no query parameter {name!r}", name)
            check_parameter(value, parameter, name)
            if parameter.get("repeated"):
                values.setdefault(name, []).append(value)
            elif name in values:
                raise Undescribed(400, f"the query parameter {name!r} is given twice and is not repeated", name)
            else:
                values[name] = value
        for name, parameter in method.parameters.items():
            if parameter.get("location") == "query" and parameter.get("required") and name not in values:
                raise Undescribed(400, f"{method.id} requires the query parameter {name!r}", name)
        return values

    def check_body(self, method, content_type, body):
        """The request body as a JSON value, checked against the method's request schema (an empty body is
        the empty message); a method without a request schema takes no body. Raises Undescribed."""
        if method.request is None:
            if body.strip():
                raise Undescribed(400, f"{method.id} takes no request body")
            return None
        if not body.strip():
            return {}
        media = content_type.split(";")[0].strip().lower()
        if media != "application/json":
            raise Undescribed(400, f"the body of {method.id} is {media or 'untyped'}, not application/json")
        try:
            value = json.loads(body, object_pairs_hook=unique_fields)
        except (ValueError, UnicodeDecodeError) as error:
            raise Undescribed(400, f"the body is not JSON: {error}")
        self.check(value, {"$ref": method.request}, method.request, request=True)
        return value

    def check_response(self, method, value):
        """Raises Undescribed (naming the stand-in's own mistake) unless `value` fits the method's response
        schema as Google writes it; a method without a response schema answers an empty body (None)."""
        if method.response is None:
            if value is not None:
                raise Undescribed(500, f"{method.id} has no response schema but the stand-in made a body")
            return
        self.check(value, {"$ref": method.response}, method.response, request=False)

    # One value against one schema

    def check(self, value, schema, where, request):
        """Raises Undescribed unless `value` fits `schema`. Requests are read as Google's JSON parser reads
        them (null is the default value; integers may come as strings; int64 may come as a number);
        responses must be written as Google writes them."""
        if "$ref" in schema:
            schema = self.schemas[schema["$ref"]]
        if value is None and request:
            return
        kind = schema.get("type")
        if kind == "object":
            if not isinstance(value, dict):
                raise Undescribed(400, f"{where} should be an object, not {type_name(value)}", where)
            properties = schema.get("properties", {})
            extra = schema.get("additionalProperties")
            for name, item in value.items():
                if name in properties:
                    self.check(item, properties[name], f"{where}.{name}", request)
                elif extra is not None:
                    self.check(item, extra, f"{where}[{name!r}]", request)
                else:
                    raise Undescribed(400, f"{where} has no field {name!r} (the schema has "
                                      f"{', '.join(sorted(properties)) or 'none'})", f"{where}.{name}")
            return
        if kind == "array":
            if not isinstance(value, list):
                raise Undescribed(400, f"{where} should be a list, not {type_name(value)}", where)
            for index, item in enumerate(value):
                self.check(item, schema.get("items", {}), f"{where}[{index}]", request)
            return
        check_scalar(value, schema, where, request)


def unique_fields(pairs):
    """A JSON object's fields, refusing one given twice (Google's JSON parser refuses it too)."""
    fields = {}
    for name, value in pairs:
        if name in fields:
            raise ValueError(f"the field {name!r} is given twice")
        fields[name] = value
    return fields


def type_name(value):
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number")


def check_scalar(value, schema, where, request):
    """A JSON scalar against a discovery type, format and enum."""
    kind, form = schema.get("type"), schema.get("format")
    if kind == "boolean":
        if not isinstance(value, bool):
            raise Undescribed(400, f"{where} should be true or false, not {value!r}", where)
    elif kind == "integer":
        text = value if request and isinstance(value, str) else None
        if text is not None and DIGITS.fullmatch(text):
            value = int(text)
        if isinstance(value, bool) or not isinstance(value, int):
            raise Undescribed(400, f"{where} should be an integer number, not {value!r}", where)
        low, high = UINT32 if form == "uint32" else INT32
        if not low <= value <= high:
            raise Undescribed(400, f"{where} is {value}, outside {form or 'int32'}", where)
    elif kind == "number":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise Undescribed(400, f"{where} should be a number, not {value!r}", where)
    elif kind == "string":
        if form == "int64" and request and isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            raise Undescribed(400, f"{where} should be a string, not {value!r}", where)
        check_string_format(value, form, where, strict=not request)
        if "enum" in schema and value not in schema["enum"]:
            raise Undescribed(400, f"{where} is {value!r}, not one of {schema['enum']}", where)
    elif kind is not None:
        raise Undescribed(500, f"{where} has the type {kind!r}, which the stand-in cannot check", where)


def check_string_format(value, form, where, strict):
    """The string formats the document uses. `strict` (answers) also wants Google's own spelling: int64 with
    no sign or zero padding beyond what Google writes, times in UTC with a Z."""
    if form == "int64":
        if not DIGITS.fullmatch(value) or not INT64[0] <= int(value) <= INT64[1]:
            raise Undescribed(400, f"{where} is {value!r}, not an int64", where)
        if strict and str(int(value)) != value:
            raise Undescribed(400, f"{where} is {value!r}, not an int64 as Google writes one", where)
    elif form == "google-datetime":
        if not RFC3339.fullmatch(value) or (strict and not value.endswith("Z")):
            raise Undescribed(400, f"{where} is {value!r}, not an RFC 3339 time" + (" in UTC" if strict else ""),
                              where)
    elif form == "google-duration":
        if not DURATION.fullmatch(value):
            raise Undescribed(400, f"{where} is {value!r}, not a duration such as \"3.5s\"", where)
    elif form == "google-fieldmask":
        if not FIELD_MASK.fullmatch(value):
            raise Undescribed(400, f"{where} is {value!r}, not a field mask", where)
    elif form == "byte":
        try:
            base64.b64decode(value.replace("-", "+").replace("_", "/") + "=" * (-len(value) % 4), validate=True)
        except (binascii.Error, ValueError):
            raise Undescribed(400, f"{where} is not base64", where)


def check_parameter(text, parameter, name):
    """A path or query parameter (always text on the wire) against its declared type, format and enum."""
    kind, form = parameter.get("type", "string"), parameter.get("format")
    if kind == "boolean":
        if text not in ("true", "false"):
            raise Undescribed(400, f"the parameter {name!r} is {text!r}, not true or false", name)
    elif kind == "integer":
        if not DIGITS.fullmatch(text):
            raise Undescribed(400, f"the parameter {name!r} is {text!r}, not an integer", name)
        low, high = UINT32 if form == "uint32" else INT32
        if not low <= int(text) <= high:
            raise Undescribed(400, f"the parameter {name!r} is {text}, outside {form or 'int32'}", name)
    elif kind == "string":
        check_string_format(text, form, name, strict=False)
    if "enum" in parameter and text not in parameter["enum"]:
        raise Undescribed(400, f"the parameter {name!r} is {text!r}, not one of {parameter['enum']}", name)
