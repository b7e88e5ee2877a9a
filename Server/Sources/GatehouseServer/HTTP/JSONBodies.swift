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
        let buffer = try await collectBody(limit: limit)
        if let contentType = headers[.contentType], !contentType.lowercased().hasPrefix("application/json") {
            throw GatehouseError(
                status: 415, code: .unsupportedMediaType, message: "Send the request body as application/json.")
        }
        let data = Data(buffer.readableBytesView)
        switch JSONShape.problem(in: data) {
        case .duplicateKey(let key)?:
            throw GatehouseError.invalidRequest("The request body names the field '\(key)' more than once.")
        case .tooDeep?:
            throw GatehouseError.invalidRequest("The request body nests deeper than \(JSONShape.maximumDepth) levels.")
        case .malformed?, nil:
            break  // The decoder says what is wrong, and where.
        }
        do {
            return try JSONDecoder().decode(T.self, from: data.isEmpty ? Data("{}".utf8) : data)
        } catch let error as DecodingError {
            throw GatehouseError.invalidRequest(Self.message(for: error))
        }
    }

    /// The whole body, at most `limit` bytes (413 beyond); `ClientWentAway` when the connection
    /// ended before the body did.
    func collectBody(limit: Int) async throws -> ByteBuffer {
        do {
            return try await body.collect(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw GatehouseError.payloadTooLarge(limit: limit)
        } catch {
            throw ClientWentAway(cause: error)
        }
    }

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

/// The client closed the connection (or it broke) before its request body arrived: nobody is
/// left to answer, so it is counted and logged at debug, not as a failure of the server.
struct ClientWentAway: Error {
    var cause: any Error
}
