import Foundation
import GatehouseCore
import GatehouseServer
import GatehouseTestSupport
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Issue 63: `/auth/v1`'s `POST /verify` with a number on a server whose preset has phone
/// sign-in off answers as GoTrue does: the number's E.164 shape is checked first (400
/// `validation_failed`), and then no code can match (403 `otp_expired`), never
/// `provider_disabled`.
@Suite struct GoTrueVerifyTests {
    @Test(arguments: Backend.available)
    func aPhoneCodeWithPhoneOffIsAnsweredAsGoTrueAnswersIt(_ backend: Backend) async throws {
        try await TestApp.run(backend, preset: "handz", adjust: SupabaseCompatTests.withBothKeys) { client, config in
            #expect(config.preset.signInMethods.phone == false)
            let api = AuthClient(client: client)
            let cases: [(phone: String, status: HTTPResponse.Status, code: String, message: String)] = [
                ("not a number", .badRequest, "validation_failed", "Invalid phone number format (E.164 required)"),
                ("+0123456789", .badRequest, "validation_failed", "Invalid phone number format (E.164 required)"),
                ("1", .badRequest, "validation_failed", "Invalid phone number format (E.164 required)"),
                ("+14155550142", .forbidden, "otp_expired", "Token has expired or is invalid"),
                ("14155550142", .forbidden, "otp_expired", "Token has expired or is invalid"),
            ]
            for (phone, status, code, message) in cases {
                for type in ["sms", "phone_change"] {
                    let answer = try await api.post(
                        "/auth/v1/verify", PhoneTests.json(["type": type, "phone": phone, "token": "123456"]),
                        headers: WaysInTests.apikey.merging([HTTPField.Name("X-Supabase-Api-Version")!: "2024-01-01"]))
                    let body = try #require(try JSONSerialization.jsonObject(with: Data(answer.body.readableBytesView)) as? [String: Any])
                    #expect(answer.status == status && body["code"] as? String == code && body["msg"] as? String == message, "\(type) \(phone): \(answer.text)")
                }
            }
        }
    }
}
