import Foundation
import GatehouseClient
import GatehouseCore
import GatehouseTestSupport
import GatehouseWire
import HummingbirdTesting
import Testing

/// The sign-up and log-in form models against a live server: SyncWell's confirmation field
/// (§2.1) and Handz's log-in validation (CH07 §8.4).
@MainActor @Suite struct SDKFormTests {
    /// SyncWell §2.1: the password typed twice; a mismatch shows the preset's message and keeps
    /// the button off; Handz's form has no such field.
    @Test func syncWellSignUpConfirmsThePassword() async throws {
        try await TestApp.run(.sqlite, preset: "syncwell", setup: .live) { server, _ in try await Self.confirmationBody(server) }
        try await TestApp.run(.sqlite, preset: "handz", setup: .live) { server, _ in try await Self.noConfirmationBody(server) }
    }

    static func confirmationBody(_ server: any TestClientProtocol) async throws {
        do {
            let device = try TestDevice()
            defer { device.remove() }
            let client = try device.launch(port: try #require(server.port))
            let form = SignUpForm(client: client, configuration: try await client.loadConfiguration())
            #expect(form.asksToConfirmPassword)
            form.email = "confirm@example.com"
            form.password = "Tr1cky-Passphrase"
            form.confirmPassword = "Tr1cky-Passphrasf"
            #expect(form.confirmationMessage == "Passwords do not match." && !form.canSubmit)
            device.transport.reset()
            #expect(await form.submit() == false)
            #expect(device.transport.requests.isEmpty, "nothing is sent while the two differ")
            form.confirmPassword = "Tr1cky-Passphrase"
            #expect(form.confirmationMessage == nil && form.canSubmit)
            #expect(await form.submit())
            #expect(await client.state.user?.email == "confirm@example.com")
        }
    }

    static func noConfirmationBody(_ server: any TestClientProtocol) async throws {
        do {
            let device = try TestDevice()
            defer { device.remove() }
            let client = try device.launch(port: try #require(server.port))
            let form = SignUpForm(client: client, configuration: try await client.loadConfiguration())
            #expect(!form.asksToConfirmPassword)
            // CH07 §8.3 and §10: Terms and Privacy links under the form (the preset's placeholders).
            #expect(form.termsURL?.absoluteString == "https://handz.example/terms")
            #expect(form.privacyURL?.absoluteString == "https://handz.example/privacy")
            form.email = "noconfirm@example.com"
            form.password = "correct horse battery"
            #expect(form.canSubmit)
        }
    }

    /// Handz CH07 §8.4: an address that is not one, or an empty password, keeps Log in off and
    /// sends nothing; the server, asked anyway, gives the one generic answer.
    @Test func loginNeedsAnAddressAndAPassword() async throws {
        try await TestApp.run(.sqlite, preset: "handz", setup: .live) { server, _ in try await Self.loginValidationBody(server) }
    }

    static func loginValidationBody(_ server: any TestClientProtocol) async throws {
        do {
            let device = try TestDevice()
            defer { device.remove() }
            let client = try device.launch(port: try #require(server.port))
            let form = LoginForm(client: client)
            device.transport.reset()
            for (email, password) in [("not-an-address", "correct horse battery"), ("a@b", "x"), ("person@example.com", "")] {
                form.email = email
                form.password = password
                #expect(!form.canSubmit, "\(email) / \(password.isEmpty ? "empty" : "set")")
                #expect(await form.submit() == false)
            }
            #expect(device.transport.requests.isEmpty)

            let api = AuthClient(client: server)
            for body in [#"{"email": "not-an-address", "password": "correct horse battery"}"#, #"{"email": "person@example.com", "password": ""}"#] {
                let response = try await api.post("/v1/auth/login", body)
                #expect(response.status == .unauthorized && response.error?.code == .invalidCredentials, "\(body)")
                #expect(response.error?.message == "Incorrect email or password.")
            }
        }
    }
}
