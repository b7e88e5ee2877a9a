import GatehouseWire
import JWTKit

// The answers of the signed-in reads, written by themselves (`DirectJSON`): the same members as
// each type's `encode(to:)`, keys in byte order. `DirectJSONTests` holds each to `CompactJSON`'s
// bytes (JSONEncoder's) with every member set, so a member added to a type and not here fails it.

extension MeResponse: DirectJSON {
    package func write(to json: inout JSONWriter) throws {
        try json.object { json in
            try json.member("entitlements", entitlements)
            try json.member("user", user)
        }
    }
}

extension UserPayload: DirectJSON {
    package func write(to json: inout JSONWriter) throws {
        try json.object { json in
            try json.member("app_metadata", appMetadata)
            try json.member("avatar_url", avatarURL)
            try json.member("created_at", createdAt)
            try json.member("display_name", displayName)
            try json.member("email", email)
            try json.member("email_verified", emailVerified)
            try json.member("handle", handle)
            try json.member("id", id)
            try json.member("identities", identities)
            try json.member("is_anonymous", isAnonymous)
            try json.member("onboarding_complete", onboardingComplete)
            try json.member("phone", phone)
            try json.member("phone_verified", phoneVerified)
            try json.member("user_metadata", userMetadata)
        }
    }
}

extension IdentityPayload: DirectJSON {
    package func write(to json: inout JSONWriter) throws {
        try json.object { json in
            try json.member("created_at", createdAt)
            try json.member("email", email)
            try json.member("is_private_relay", isPrivateRelay)
            try json.member("provider", provider)
        }
    }
}

extension EntitlementsPayload: DirectJSON {
    package func write(to json: inout JSONWriter) throws {
        try json.object { json in
            try json.member("capabilities", capabilities)
            try json.member("credits", credits)
            try json.member("evaluated_at", evaluatedAt)
            try json.member("limits", limits)
            try json.member("plan_state", planState)
            try json.member("read_only", readOnly)
            // Left out when nil (`encodeIfPresent`).
            if let sources { try json.member("sources", sources) }
            try json.member("subscription", subscription)
            try json.member("tier", tier)
            try json.member("trial", trial)
        }
    }
}

extension CreditBalance: DirectJSON {
    package func write(to json: inout JSONWriter) throws {
        try json.object { json in
            try json.member("granted", granted)
            try json.member("remaining", remaining)
            try json.member("resets_at", resetsAt)
        }
    }
}

extension TrialInfo: DirectJSON {
    package func write(to json: inout JSONWriter) throws {
        try json.object { json in
            try json.member("days_left", daysLeft)
            try json.member("ends_at", endsAt)
        }
    }
}

extension SubscriptionInfo: DirectJSON {
    package func write(to json: inout JSONWriter) throws {
        try json.object { json in
            try json.member("expires_at", expiresAt)
            try json.member("product_id", productID)
            try json.member("renews_at", renewsAt)
            try json.member("source", source)
            try json.member("status", status)
            // Only for a test purchase.
            if testPurchase == true { try json.member("test_purchase", true) }
            try json.member("will_renew", willRenew)
        }
    }
}

extension GateDecision: DirectJSON {
    package func write(to json: inout JSONWriter) throws {
        try json.object { json in
            try json.member("actions", actions)
            try json.member("allowed", allowed)
            try json.member("gate", gate)
            try json.member("message", message)
            try json.member("reason_code", reasonCode)
            try json.member("secondary_message", secondaryMessage)
        }
    }
}

extension GateAction: DirectJSON {
    package func write(to json: inout JSONWriter) throws {
        try json.object { json in
            try json.member("id", id)
            try json.member("label", label)
        }
    }
}

// The sign-in and refresh answers (issue 61, step 20): every login, sign-up, refresh and
// provider sign-in answers one of them.

extension AuthResponse: DirectJSON {
    package func write(to json: inout JSONWriter) throws {
        try json.object { json in
            try json.member("session", session)
            try json.member("user", user)
        }
    }
}

extension SignInResponse: DirectJSON {
    package func write(to json: inout JSONWriter) throws {
        try json.object { json in
            try json.member("created", created)
            try json.member("session", session)
            try json.member("user", user)
        }
    }
}

extension SessionResponse: DirectJSON {
    package func write(to json: inout JSONWriter) throws {
        try json.object { json in
            try json.member("session", session)
        }
    }
}

extension SessionPayload: DirectJSON {
    package func write(to json: inout JSONWriter) throws {
        try json.object { json in
            try json.member("access_token", accessToken)
            try json.member("expires_at", expiresAt)
            try json.member("expires_in", expiresIn)
            try json.member("refresh_token", refreshToken)
            try json.member("session_id", sessionID)
            try json.member("token_type", tokenType)
        }
    }
}

extension SignInAnswer: DirectJSON, JSONWritable where Signed: DirectJSON {
    /// As `encode(to:)`: the signed-in answer's own object, or `{"mfa": …}`.
    package func write(to json: inout JSONWriter) throws {
        switch self {
        case .signedIn(let signed):
            try signed.write(to: &json)
        case .mfaRequired(let challenge):
            try json.object { json in
                try json.member("mfa", challenge)
            }
        }
    }
}

extension MFAChallengePayload: DirectJSON {
    package func write(to json: inout JSONWriter) throws {
        try json.object { json in
            try json.member("challenge_id", challengeID)
            try json.member("expires_at", expiresAt)
            try json.member("factors", factors)
        }
    }
}

extension MFAFactorSummary: DirectJSON {
    package func write(to json: inout JSONWriter) throws {
        try json.object { json in
            try json.member("id", id)
            try json.member("name", name)
            try json.member("type", type)
        }
    }
}

// An access token's claims and every token's header, written by themselves when a token is
// signed (`JWTEncoder`): through `Encoder` and `CompactJSON`'s tree they were about 3 % of a
// login's work beyond its hash (BENCHMARKS.md, issue 61 step 24). The claims' `Codable` is
// synthesised, so a nil claim is left out; a header is jwt-kit's dictionary of fields.

extension AccessTokenClaims: DirectJSON {
    package func write(to json: inout JSONWriter) throws {
        try json.object { json in
            try json.member("aal", ifPresent: aal?.rawValue)
            try json.member("amr", ifPresent: amr)
            try json.member("app", ifPresent: app)
            try json.member("app_metadata", ifPresent: appMetadata)
            try json.member("aud", aud)
            try json.member("email", ifPresent: email)
            try json.member("email_verified", ifPresent: emailVerified)
            try json.member("exp", exp)
            try json.member("iat", ifPresent: iat)
            try json.member("is_anonymous", ifPresent: isAnonymous)
            try json.member("iss", iss)
            try json.member("nbf", ifPresent: nbf)
            try json.member("phone", ifPresent: phone)
            try json.member("phone_verified", ifPresent: phoneVerified)
            try json.member("plan", ifPresent: plan)
            try json.member("plan_expires_at", ifPresent: planExpiresAt)
            try json.member("role", ifPresent: role)
            try json.member("session_id", ifPresent: sessionID)
            try json.member("sid", sid)
            try json.member("sub", sub)
            try json.member("user_metadata", ifPresent: userMetadata)
        }
    }
}

extension AuthenticationMethodReference: DirectJSON {
    package func write(to json: inout JSONWriter) throws {
        try json.object { json in
            try json.member("method", method)
            try json.member("timestamp", timestamp)
        }
    }
}

extension JWTHeader: DirectJSON {
    package func write(to json: inout JSONWriter) throws { try json.dictionary(fields) }
}

extension JWTHeaderField: JSONWritable {
    /// As jwt-kit's `encode(to:)`: each case as its single value.
    package func write(to json: inout JSONWriter) throws {
        switch self {
        case .null: json.literal("null")
        case .bool(let value): value.write(to: &json)
        case .int(let value): json.integer(value)
        case .decimal(let value): try json.number(value)
        case .string(let value): json.string(value)
        case .array(let value): try json.array(value)
        case .object(let value): try json.dictionary(value)
        }
    }
}
