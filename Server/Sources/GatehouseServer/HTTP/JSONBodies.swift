import Crypto
import Foundation
import GatehouseCore
import GatehouseWire
import Hummingbird
import NIOCore

/// Encodes response bodies the one way Gatehouse sends JSON.
enum JSONBody {
    /// `value` as the answer's JSON body, written by `CompactJSON`.
    static func response(_ value: some Encodable, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) throws -> Response {
        response(bytes: try CompactJSON.encode(value), status: status, headers: headers)
    }

    /// `value` as the answer's JSON body, written by itself (`DirectJSON`).
    static func response(_ value: some DirectJSON, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) throws -> Response {
        response(bytes: try CompactJSON.encode(value), status: status, headers: headers)
    }

    private static func response(bytes: [UInt8], status: HTTPResponse.Status, headers: HTTPFields) -> Response {
        var fields = headers
        fields[.contentType] = "application/json; charset=utf-8"
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    static func empty(_ status: HTTPResponse.Status = .noContent) -> Response {
        Response(status: status)
    }
}

/// A JSON document that changes only with the preset (`GET /v1/config`): encoded once when the
/// server starts, served as the same bytes with a strong `ETag` (their SHA-256), and answered
/// 304 with no body when the request's `If-None-Match` names that tag, so a client's cached copy
/// revalidates without the document crossing the network again.
struct EncodedDocument: Sendable {
    let body: ByteBuffer
    /// `"` + the bytes' SHA-256 in base64url + `"`: changes whenever a byte does.
    let etag: String
    let cacheControl: String

    init(_ value: some Encodable, cacheControl: String) throws {
        let data = Data(try CompactJSON.encode(value))
        body = ByteBuffer(bytes: data)
        etag = "\"" + Data(SHA256.hash(data: data)).base64URLEncoded + "\""
        self.cacheControl = cacheControl
    }

    func response(to request: Request) -> Response {
        var headers: HTTPFields = [.eTag: etag, .cacheControl: cacheControl]
        if Self.matches(request.headers[values: .ifNoneMatch], etag) {
            return Response(status: .notModified, headers: headers)
        }
        headers[.contentType] = "application/json; charset=utf-8"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: body))
    }

    /// RFC 9110 §13.1.2: `*`, or a comma-separated list of entity tags compared weakly (a `W/`
    /// prefix is ignored), across every `If-None-Match` field the request carried.
    static func matches(_ fields: [String], _ etag: String) -> Bool {
        for field in fields {
            for part in field.split(separator: ",") {
                var tag = part.trimmingCharacters(in: .whitespaces)[...]
                if tag == "*" { return true }
                if tag.hasPrefix("W/") { tag = tag.dropFirst(2) }
                if tag == etag[...] { return true }
            }
        }
        return false
    }
}

extension Request {
    /// Decodes a JSON body, refusing bodies over `limit` bytes (413) and malformed JSON, a
    /// missing field or a wrong type (400 `invalid_request` saying which field).
    func decodeJSON<T: Decodable>(_ type: T.Type, limit: Int) async throws -> T {
        try JSONRequestBody.decode(type, from: try await jsonBody(limit: limit)).value
    }

    /// The same, for a body that reads itself (``JSONReadable``) when it can.
    func decodeJSON<T: JSONReadable>(_ type: T.Type, limit: Int) async throws -> T {
        try JSONRequestBody.decode(type, from: try await jsonBody(limit: limit)).value
    }

    /// The body, once its content type says JSON (or says nothing).
    private func jsonBody(limit: Int) async throws -> ByteBuffer {
        let buffer = try await collectBody(limit: limit)
        if let contentType = headers[.contentType], !contentType.lowercased().hasPrefix("application/json") {
            throw GatehouseError(
                status: 415, code: .unsupportedMediaType, message: "Send the request body as application/json.")
        }
        return buffer
    }

    /// The whole body, at most `limit` bytes (413 beyond). Once `WholeBodyMiddleware` has run it
    /// is in memory (on a connection, `WholeBodyHandler` read it and kept its time-out) and is
    /// taken as it is (`WholeRequestBody`); before that, a body read from a stream that fails is
    /// a client gone (`ClientWentAway`).
    func collectBody(limit: Int) async throws -> ByteBuffer {
        if let whole = WholeRequestBody.current {
            guard whole.readableBytes <= limit else { throw GatehouseError.payloadTooLarge(limit: limit) }
            return whole
        }
        do {
            return try await body.collect(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw GatehouseError.payloadTooLarge(limit: limit)
        } catch {
            throw ClientWentAway(cause: error)
        }
    }
}

/// The whole body of the request the current task answers, bound by `WholeBodyMiddleware` for
/// the rest of that request, so that `Request.collectBody` takes it without awaiting the request's
/// `RequestBody`: that is an `AsyncSequence`, whose iterator runs off the caller's executor, and
/// reading a body already in memory through it cost `POST /v1/entitlements/check` about eight task
/// switches (BENCHMARKS.md, issue 61, step 24). Unbound for a request without a body.
enum WholeRequestBody {
    @TaskLocal static var current: ByteBuffer?
}

/// The client closed the connection (or it broke) before its request body arrived: nobody is
/// left to answer, so it is counted and logged at debug, not as a failure of the server.
struct ClientWentAway: Error {
    var cause: any Error
}

/// How a request's JSON body becomes a value: ``JSONShape`` walks it once (duplicate keys and
/// depth refused), a body type that reads itself (``JSONReadable``) takes the walk's values, and
/// `JSONDecoder` decodes every other body, and every body a reader was unsure of, saying what
/// is wrong with it and where.
enum JSONRequestBody {
    /// Which way a body was decoded.
    enum Path: Equatable { case readItself, decoder }

    static func decode<T: Decodable>(_ type: T.Type, from buffer: ByteBuffer) throws -> (value: T, path: Path) {
        try decode(type, from: buffer, reader: nil)
    }

    static func decode<T: JSONReadable>(_ type: T.Type, from buffer: ByteBuffer) throws -> (value: T, path: Path) {
        try decode(type, from: buffer, reader: T.init(reading:))
    }

    private static func decode<T: Decodable>(
        _ type: T.Type, from buffer: ByteBuffer, reader: ((JSONShape.Members) throws(JSONShape.Unsure) -> T)?
    ) throws -> (value: T, path: Path) {
        // An empty body is read as `{}`.
        let empty = buffer.readableBytes == 0
        // Values are kept only for a reader; the decoder reads the bytes itself.
        let read = { (bytes: UnsafeRawBufferPointer) in JSONShape.read(bytes: bytes, keepingValues: reader != nil) }
        let reading = empty ? emptyObject.withUnsafeBytes(read) : buffer.withUnsafeReadableBytes(read)
        switch reading {
        case .failure(.duplicateKey(let key)):
            throw GatehouseError.invalidRequest("The request body names the field '\(key)' more than once.")
        case .failure(.tooDeep):
            throw GatehouseError.invalidRequest("The request body nests deeper than \(JSONShape.maximumDepth) levels.")
        case .failure(.malformed):
            break  // The decoder says what is wrong, and where.
        case .success(let reading):
            if let reader, let members = reading.object, let value = try? reader(members) { return (value, .readItself) }
        }
        do {
            return (try JSONDecoder().decode(T.self, from: empty ? Data(emptyObject) : Data(buffer.readableBytesView)), .decoder)
        } catch let error as DecodingError {
            throw GatehouseError.invalidRequest(message(for: error))
        }
    }

    private static let emptyObject: [UInt8] = Array("{}".utf8)

    private static func message(for error: DecodingError) -> String {
        func field(_ path: [any CodingKey]) -> String {
            path.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context):
            return "The field '\(field(context.codingPath + [key]))' is required."
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            let name = field(context.codingPath)
            return name.isEmpty ? "The request body must be a JSON object." : "The field '\(name)' has the wrong type."
        case .dataCorrupted(let context):
            let name = field(context.codingPath)
            return name.isEmpty ? "The request body is not valid JSON." : "The field '\(name)' is not valid."
        @unknown default:
            return "The request body is not valid."
        }
    }
}
