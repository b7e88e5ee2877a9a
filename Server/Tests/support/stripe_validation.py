"""Checks requests against Stripe's OpenAPI description (the trimmed copy in stripe-openapi.json), for
stripe_standin.py: which operation a method and path name, Stripe's bracket form encoding
(`a[b][0][c]=v`, `expand[]=x`) parsed into nested dicts and lists, and each value checked against its
schema (type, maxLength, enum, properties, required, additionalProperties, items, anyOf).

A property the trimmed copy keeps only by name (schema `{}`) is one Gatehouse never sends: sending it is
rejected too, so a new field Gatehouse starts to send must first get Stripe's schema copied in."""
import json
import re
import urllib.parse

FORM = "application/x-www-form-urlencoded"
INTEGER = re.compile(r"-?[0-9]+")
NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?")
KEY = re.compile(r"([^\[\]]+)((?:\[[^\[\]]*\])*)")


class Invalid(Exception):
    """A request the spec does not describe; `param` names the offending parameter, as Stripe's errors do."""

    def __init__(self, reason, param=None):
        super().__init__(reason)
        self.reason, self.param = reason, param


def parse_pairs(text):
    """`key=value&...` into an ordered list of (key, value), failing on anything that is not a form."""
    if not text:
        return []
    try:
        return urllib.parse.parse_qsl(text, keep_blank_values=True, strict_parsing=True, errors="strict")
    except (ValueError, UnicodeDecodeError) as error:
        raise Invalid(f"the form does not parse: {error}")


def nest(pairs):
    """Stripe's bracket notation into nested values: `a[b]=1` is {"a": {"b": "1"}}, `a[0][c]=1` and
    `a[]=1` make lists. A key given twice, or used both as a scalar and as a container, is rejected."""
    root = {}
    for key, value in pairs:
        match = KEY.fullmatch(key)
        if not match:
            raise Invalid(f"{key!r} is not a parameter name in Stripe's bracket notation", key)
        path = [match.group(1)] + re.findall(r"\[([^\[\]]*)\]", match.group(2))
        node = root
        for depth, segment in enumerate(path):
            last = depth == len(path) - 1
            if segment == "":  # `a[]`: the next element of a list
                segment = len(node)
            if last:
                if segment in node:
                    raise Invalid(f"{key} is given twice", key)
                node[segment] = value
            else:
                child = node.setdefault(segment, {})
                if not isinstance(child, dict):
                    raise Invalid(f"{key} treats a scalar parameter as an object", key)
                node = child
    return _lists(root, "")


def _lists(node, where):
    """Turns the dicts whose keys are 0, 1, ... n-1 (from `[0]` or `[]`) into lists."""
    if not isinstance(node, dict):
        return node
    numeric = [k for k in node if isinstance(k, int) or (isinstance(k, str) and k.isdigit())]
    if numeric and len(numeric) != len(node):
        raise Invalid(f"{where or 'the form'} mixes list indices and names")
    if numeric:
        indexed = {int(k): v for k, v in node.items()}
        if sorted(indexed) != list(range(len(indexed))):
            raise Invalid(f"{where} has list indices {sorted(indexed)}, not 0..{len(indexed) - 1}", where)
        return [_lists(indexed[i], f"{where}[{i}]") for i in range(len(indexed))]
    return {k: _lists(v, f"{where}[{k}]" if where else k) for k, v in node.items()}


def check(value, schema, where):
    """Raises Invalid unless `value` (strings, dicts and lists from a form) fits `schema`."""
    if schema == {}:
        raise Invalid(f"{where} is in Stripe's spec, but the trimmed copy keeps only its name: "
                      "copy Stripe's schema into stripe-openapi.json before sending it", where)
    if "anyOf" in schema:
        reasons = []
        for branch in schema["anyOf"]:
            try:
                return check(value, branch, where)
            except Invalid as error:
                reasons.append(error.reason)
        raise Invalid(f"{where} matches none of anyOf: " + "; ".join(reasons), where)
    kind = schema.get("type")
    if "enum" in schema and value not in schema["enum"]:
        raise Invalid(f"{where} is {value!r}, not one of {schema['enum']}", where)
    if kind == "object":
        return _check_object(value, schema, where)
    if kind == "array":
        if not isinstance(value, list):
            raise Invalid(f"{where} should be a list ({where}[0]=...)", where)
        for index, item in enumerate(value):
            check(item, schema.get("items", {"type": "string"}), f"{where}[{index}]")
        return
    if not isinstance(value, str):
        raise Invalid(f"{where} should be a single {kind or 'value'}, not an object or list", where)
    if kind == "string" and "maxLength" in schema and len(value) > schema["maxLength"]:
        raise Invalid(f"{where} is {len(value)} characters, more than {schema['maxLength']}", where)
    if kind == "integer" and not INTEGER.fullmatch(value):
        raise Invalid(f"{where} is {value!r}, not an integer", where)
    if kind == "number" and not NUMBER.fullmatch(value):
        raise Invalid(f"{where} is {value!r}, not a number", where)
    if kind == "boolean" and value not in ("true", "false"):
        raise Invalid(f"{where} is {value!r}, not true or false", where)


def _check_object(value, schema, where):
    if not isinstance(value, dict):
        raise Invalid(f"{where} should be an object ({where}[key]=...), not {value!r}", where)
    properties = schema.get("properties", {})
    extra = schema.get("additionalProperties")
    for name, item in value.items():
        inner = f"{where}[{name}]" if where else name
        if name in properties:
            check(item, properties[name], inner)
        elif isinstance(extra, dict):
            check(item, extra, inner)
        else:  # Stripe rejects unknown nested parameters too, whether or not additionalProperties is false
            raise Invalid(f"Received unknown parameter: {inner}", inner)
    for name in schema.get("required", []):
        if name not in value:
            inner = f"{where}[{name}]" if where else name
            raise Invalid(f"Missing required param: {inner}.", inner)


class Spec:
    """The trimmed description: its version and, per path template, its operations."""

    def __init__(self, path):
        with open(path) as file:
            document = json.load(file)
        self.version = document["info"]["version"]
        self.routes = []  # (compiled path pattern, template, {method: operation})
        for template, operations in document["paths"].items():
            pattern = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(template))
            self.routes.append((re.compile(pattern), template, operations))

    def validate(self, method, path, query, content_type, body):
        """Returns (template, query pairs, body pairs) for a request the spec describes; raises Invalid."""
        for pattern, template, operations in self.routes:
            match = pattern.fullmatch(path)
            if match:
                break
        else:
            raise Invalid(f"Unrecognized request URL ({method}: {path})")
        operation = operations.get(method.lower())
        if operation is None:
            raise Invalid(f"{method} is not an operation on {template} (the spec has {sorted(operations)})")
        parameters = operation.get("parameters", [])
        for parameter in (p for p in parameters if p["in"] == "path"):
            check(urllib.parse.unquote(match.group(parameter["name"])), parameter["schema"], parameter["name"])
        query_pairs = parse_pairs(query)
        described = {p["name"]: p for p in parameters if p["in"] == "query"}
        for name, value in nest(query_pairs).items():
            if name not in described:
                raise Invalid(f"Received unknown parameter: {name} (query)", name)
            check(value, described[name]["schema"], name)
        for name, parameter in described.items():
            if parameter.get("required") and name not in nest(query_pairs):
                raise Invalid(f"Missing required param: {name}.", name)
        body_pairs = []
        if body:
            if content_type != FORM:
                raise Invalid(f"the body is {content_type or 'untyped'}, not {FORM}")
            body_pairs = parse_pairs(body)
        schema = operation.get("requestBody", {}).get("content", {}).get(FORM, {}).get("schema")
        if body_pairs and schema is None:
            raise Invalid(f"{method} {template} takes no body")
        if schema is not None:
            _check_object(nest(body_pairs), schema, "")
        return template, query_pairs, body_pairs
