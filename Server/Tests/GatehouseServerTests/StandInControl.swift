import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The control API every provider stand-in serves under `/_control/` (JSON in and out).
enum StandInControl {
    /// Calls `method /_control/<path>` of the stand-in at `base`; anything but 200 is an error
    /// carrying the stand-in's answer, named for `standIn`.
    static func call(_ base: String, _ standIn: String, _ method: String, _ path: String, _ body: [String: Any]? = nil) async throws -> Data {
        guard let endpoint = URL(string: "\(base)/_control/\(path)") else { throw ProcessError("bad control path \(path)") }
        var request = URLRequest(url: endpoint)
        request.httpMethod = method
        if let body {
            request.httpBody = try JSONSerialization.data(withJSONObject: body)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let (data, response) = try await HangWatch.watching("the \(standIn) stand-in's \(method) /_control/\(path)") {
            try await URLSession.shared.data(for: request)
        }
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        guard status == 200 else {
            throw ProcessError("the \(standIn) stand-in answered \(method) /_control/\(path) with \(status): \(String(decoding: data, as: UTF8.self))")
        }
        return data
    }
}
