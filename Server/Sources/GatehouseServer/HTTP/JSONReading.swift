import GatehouseWire

/// A request body that reads itself from what ``JSONShape`` has already walked, member by
/// member, instead of going through `JSONDecoder` (issue 61: the old walk and the decoder took
/// about 10 µs of a `check`). A reader gives up (``JSONShape/Unsure``) wherever the decoder
/// might not give the same value: a member missing or of another type, a number that is not a
/// plain whole number. `JSONDecoder` then decodes the body and says what is wrong, as it always
/// did.
package protocol JSONReadable: Decodable {
    init(reading members: JSONShape.Members) throws(JSONShape.Unsure)
}

extension JSONShape {
    /// A reader cannot be sure of the value `JSONDecoder` would give.
    package struct Unsure: Error {}
}

extension JSONShape.Members {
    /// The member a non-optional property reads.
    package func required(_ key: String) throws(JSONShape.Unsure) -> JSONShape.Node {
        guard let node = self[key] else { throw JSONShape.Unsure() }
        return node
    }

    /// The member an optional property reads: nil when it is missing or null.
    package func optional(_ key: String) -> JSONShape.Node? {
        switch self[key] {
        case nil, .null?: nil
        case let node?: node
        }
    }
}

extension JSONShape.Node {
    package func string() throws(JSONShape.Unsure) -> String {
        guard case .string(let value) = self else { throw JSONShape.Unsure() }
        return value
    }

    /// An object of whole numbers (`{"saved_count": 2}`).
    package func integers() throws(JSONShape.Unsure) -> [String: Int] {
        guard case .object(let members) = self else { throw JSONShape.Unsure() }
        var values: [String: Int] = [:]
        values.reserveCapacity(members.pairs.count)
        for (key, node) in members.pairs {
            guard case .integer(let value) = node else { throw JSONShape.Unsure() }
            values[key] = value
        }
        return values
    }
}

// The bodies of the routes a client calls most: checks and spends, refreshes, and password
// sign-ins (whose body `JSONDecoder` read in about 2 % of a login's work beyond its hash,
// BENCHMARKS.md issue 61 step 24).

extension EntitlementCheckRequest: JSONReadable {
    package init(reading members: JSONShape.Members) throws(JSONShape.Unsure) {
        self.init(action: try members.required("action").string(), context: try members.optional("context")?.integers())
    }
}

extension CreditSpendRequest: JSONReadable {
    package init(reading members: JSONShape.Members) throws(JSONShape.Unsure) {
        self.init(
            idempotencyKey: try members.required("idempotency_key").string(), action: try members.required("action").string(),
            subject: try members.optional("subject")?.string())
    }
}

extension RefreshRequest: JSONReadable {
    package init(reading members: JSONShape.Members) throws(JSONShape.Unsure) {
        self.init(refreshToken: try members.required("refresh_token").string())
    }
}

extension EmailPasswordRequest: JSONReadable {
    package init(reading members: JSONShape.Members) throws(JSONShape.Unsure) {
        self.init(
            email: try members.required("email").string(), password: try members.required("password").string(),
            captchaToken: try members.optional("captcha_token")?.string())
    }
}
