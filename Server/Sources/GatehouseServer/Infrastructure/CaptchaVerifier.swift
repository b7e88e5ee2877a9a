import AsyncHTTPClient
import Foundation
import GatehouseCore
import GatehouseWire
import Logging
import NIOCore

/// CAPTCHA after repeated failures (SyncWell §6): once one IP has failed to log in the preset's
/// number of times within the hour, login and sign-up from it need a `captcha_token`, checked
/// with the provider's siteverify endpoint (the protocol Cloudflare Turnstile, hCaptcha and
/// reCAPTCHA share: a form POST of `secret`, `response` and `remoteip`, answered with
/// `{"success": bool}`).
struct CaptchaVerifier: Sendable {
    let verifyURL: URL
    let secret: String
    let client: HTTPClient
    let logger: Logger

    enum Outcome: Sendable, Equatable {
        case passed
        case failed
        case unavailable
    }

    func verify(token: String, ip: String?) async -> Outcome {
        var form = URLComponents()
        form.queryItems = [URLQueryItem(name: "secret", value: secret), URLQueryItem(name: "response", value: token)]
        if let ip { form.queryItems?.append(URLQueryItem(name: "remoteip", value: ip)) }
        // URLComponents leaves `+` alone in a query; a form body must escape it.
        let body = (form.percentEncodedQuery ?? "").replacingOccurrences(of: "+", with: "%2B")
        var request = HTTPClientRequest(url: verifyURL.absoluteString)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.body = .bytes(ByteBuffer(string: body))
        do {
            let response = try await client.execute(request, timeout: .seconds(5))
            let data = try await response.body.collect(upTo: 64 * 1024)
            guard response.status == .ok, let answer = try? JSONDecoder().decode(Answer.self, from: Data(buffer: data)) else {
                logger.warning("captcha verification answered oddly", metadata: ["status": "\(response.status.code)"])
                return .unavailable
            }
            return answer.success ? .passed : .failed
        } catch {
            logger.warning("captcha verification unreachable", metadata: ["error": "\(error)"])
            return .unavailable
        }
    }

    private struct Answer: Decodable {
        var success: Bool
    }
}
