import Foundation
import GatehouseCore
import GatehouseWire
import Hummingbird
import NIOCore

/// Encodes response bodies the one way Gatehouse sends JSON.
enum JSONBody {
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    static func response(_ value: some Encodable, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) throws -> Response {
        let data = try encoder.encode(value)
        var fields = headers
        fields[.contentType] = "application/json; charset=utf-8"
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func empty(_ status: HTTPResponse.Status = .noContent) -> Response {
        Response(status: status)
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
