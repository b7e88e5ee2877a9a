@testable import GatehouseServer
import Testing

/// The log's last line of defence: keys that name secrets are redacted, ids and counts are not
/// (the retention sweep's `refresh_tokens_count` and `phone_codes_count` were redacted before).
@Suite struct LogRedactionTests {
    @Test func keysThatNameSecretsAreRedactedCountsAndIdsAreNot() {
        for secret in ["password", "refresh_token", "client_secret", "authorization", "set_cookie", "api_key", "code", "phone_codes"] {
            #expect(JSONLogHandler.isSecret(secret), "\(secret)")
        }
        for plain in ["refresh_tokens_count", "phone_codes_count", "email_tokens_count", "key_id", "kid", "error_code", "status_code", "audit_rows"] {
            #expect(!JSONLogHandler.isSecret(plain), "\(plain)")
        }
    }
}
