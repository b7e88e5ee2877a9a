/// The HTTP methods the route table uses.
public enum HTTPMethodName: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case get = "GET"
    case post = "POST"
    case put = "PUT"
    case patch = "PATCH"
    case delete = "DELETE"

    public var description: String { rawValue }
}

/// A route's path as OpenAPI writes it: literal segments and whole-segment `{parameter}`s, e.g.
/// `/v1/credits/{name}/spend`. Hummingbird 2 reads the same spelling as a capture, and
/// `docs/openapi.yaml` uses it as the path key, so one string serves the table, the router and
/// the document.
public struct PathTemplate: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    public enum Segment: Hashable, Sendable {
        case literal(String)
        case parameter(String)
    }

    /// The template as written, e.g. `/v1/credits/{name}/spend`.
    public let template: String
    public let segments: [Segment]

    /// A template must start with `/`; a segment holding a `{` or `}` must be exactly one
    /// `{name}`. Both are programmer errors in a table declared once, so they trap.
    public init(_ template: String) {
        precondition(template.hasPrefix("/"), "a path template starts with /: \(template)")
        self.template = template
        segments = template.split(separator: "/").map { part in
            guard part.contains("{") || part.contains("}") else { return .literal(String(part)) }
            let name = part.dropFirst().dropLast()
            precondition(
                part.first == "{" && part.last == "}" && !name.isEmpty && !name.contains("{") && !name.contains("}"),
                "a path parameter is a whole segment {name}: \(template)")
            return .parameter(String(name))
        }
    }

    public init(stringLiteral value: String) { self.init(value) }

    public var description: String { template }

    /// The parameters' names in order.
    public var parameters: [String] {
        segments.compactMap { if case .parameter(let name) = $0 { name } else { nil } }
    }

    /// The path with each parameter replaced, in order, by one of `values`, percent-encoded so
    /// that it stays one segment: `/`, `?`, `#` and `%` are escaped, and a value of `.` or `..`
    /// cannot walk up the path. The number of values must be the number of parameters.
    public func expand(_ values: String...) -> String { expand(values) }

    public func expand(_ values: [String]) -> String {
        precondition(values.count == parameters.count, "\(template) takes \(parameters.count) parameter(s), not \(values.count)")
        var remaining = values[...]
        let parts = segments.map { segment in
            switch segment {
            case .literal(let text): text
            case .parameter: Self.escapeSegment(remaining.removeFirst())
            }
        }
        return "/" + parts.joined(separator: "/")
    }

    /// Foundation's `urlPathAllowed` without `/` stays as it is (the bytes the SDK sent for a
    /// handle before the table); every other byte is `%XX`, and so is every dot of a segment made
    /// only of dots.
    static func escapeSegment(_ value: String) -> String {
        if !value.isEmpty, value.allSatisfy({ $0 == "." }) { return String(repeating: "%2E", count: value.count) }
        var escaped = ""
        for byte in value.utf8 {
            if isSegmentByte(byte) {
                escaped.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                escaped += "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 0xF, radix: 16, uppercase: true)
            }
        }
        return escaped
    }

    /// RFC 3986's `pchar` but `;` (which `urlPathAllowed` leaves out too): unreserved characters,
    /// the other sub-delimiters, `:` and `@`.
    private static func isSegmentByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            "-._~!$&'()*+,=:@".utf8.contains(byte)
        }
    }
}

/// One route of the server: its method and path, who may call it (`Caller`), the JSON body it
/// reads (`Body`) and what it answers (`Response`). Declared once in `Endpoints`; the SDK calls through it and the server's
/// router registers it, so a wrong path, method, body or response type does not compile.
///
/// `Body` is `NoBody` when the request carries none; `Response` is `NoContent` when there is
/// nothing to read in the answer. Routes whose shapes are not Wire types use the markers
/// `FormBody`, `HTMLPage`, `YAMLDocument` and `OpaqueJSON`.
public struct Endpoint<Body: Sendable, Response: Sendable>: Sendable, Hashable, CustomStringConvertible {
    public let method: HTTPMethodName
    public let path: PathTemplate
    /// Who may call it: the credential the route reads.
    public let caller: Caller

    public init(_ method: HTTPMethodName, _ path: PathTemplate, _ caller: Caller) {
        self.method = method
        self.path = path
        self.caller = caller
    }

    /// `METHOD /path/{parameter}`, as `docs/openapi.yaml` lists operations.
    public var description: String { "\(method) \(path)" }

    /// The method and path without the types, for lists of routes.
    public var erased: AnyEndpoint { AnyEndpoint(method: method, path: path, caller: caller) }
}

/// The credential a route reads, declared with it in `Endpoints`. What holds for every route of
/// a kind is decided here once: a route that reads a session (`session`, `optionalSession`)
/// has its body read before the session is checked, and every write it makes holds that session
/// until the commit (docs/architecture.md, "A check holds until its write"); `RouteTableTests`
/// walks every state-changing one.
public enum Caller: String, Sendable, Hashable, CaseIterable {
    /// No credential: sign-up and sign-in, links and codes, webhooks (signed bodies), pages.
    case anyone
    /// A Bearer access token of a live session (401 without one).
    case session
    /// A Bearer access token when there is one (a guest, a sign-up, a restore hint without).
    case optionalSession
    /// The operator's admin key (`/admin/v1`).
    case adminKey
    /// The app backend's service key.
    case serviceKey

    /// Whether the route checks a session when the caller sends one.
    public var readsSession: Bool {
        switch self {
        case .session, .optionalSession: true
        case .anyone, .adminKey, .serviceKey: false
        }
    }
}

/// An `Endpoint` without its types: what a list of routes holds.
public struct AnyEndpoint: Hashable, Sendable, CustomStringConvertible, Comparable {
    public let method: HTTPMethodName
    public let path: PathTemplate
    public let caller: Caller

    public init(method: HTTPMethodName, path: PathTemplate, caller: Caller) {
        self.method = method
        self.path = path
        self.caller = caller
    }

    /// `METHOD /path/{parameter}`, as `docs/openapi.yaml` lists operations.
    public var description: String { "\(method) \(path)" }

    public static func < (lhs: AnyEndpoint, rhs: AnyEndpoint) -> Bool {
        (lhs.path.template, lhs.method.rawValue) < (rhs.path.template, rhs.method.rawValue)
    }
}

// Markers for `Endpoint`'s types where there is no Wire type: never values, only names.

/// The request has no body.
public enum NoBody: Sendable {}

/// The answer has nothing to read: 202 or 204, or a `{}` acknowledgement.
public enum NoContent: Sendable {}

/// An HTML form post (`application/x-www-form-urlencoded`) of a hosted page.
public enum FormBody: Sendable {}

/// A hosted HTML page.
public enum HTMLPage: Sendable {}

/// A YAML document (`/openapi.yaml`).
public enum YAMLDocument: Sendable {}

/// A JSON body whose Swift type lives outside Wire (`GET /v1/config` answers GatehouseCore's
/// `PublicConfiguration`, which Wire cannot name).
public enum OpaqueJSON: Sendable {}
