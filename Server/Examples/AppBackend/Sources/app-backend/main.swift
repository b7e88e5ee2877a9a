import AppBackendExample
import Foundation
import Hummingbird

// An app's own backend in front of Gatehouse (see AppBackendSettings). Configured by the
// environment:
//   GATEHOUSE_URL            where Gatehouse runs (default http://127.0.0.1:8080)
//   GATEHOUSE_AUDIENCE       its token audience: handz or hannah (default handz)
//   GATEHOUSE_SERVICE_KEY    the service key, for Hannah's AI and search meters
//   APP_BACKEND_ROUTES       flows, assistant or both (default: flows for handz, assistant for hannah)
//   APP_BACKEND_PORT         default 8090;  APP_BACKEND_DATABASE  default app-backend.sqlite
//   APP_BACKEND_HOOK_SECRET  Gatehouse's GATEHOUSE_HOOK_CUSTOM_ACCESS_TOKEN_SECRET: serves the
//                            claims hook at POST /hooks/custom-access-token
let environment = ProcessInfo.processInfo.environment
let audience = environment["GATEHOUSE_AUDIENCE"] ?? "handz"
let routes = (environment["APP_BACKEND_ROUTES"] ?? (audience == "hannah" ? "assistant" : "flows"))
    .split(separator: ",").compactMap { AppBackendSettings.Routes(rawValue: $0.trimmingCharacters(in: .whitespaces)) }
guard let url = URL(string: environment["GATEHOUSE_URL"] ?? "http://127.0.0.1:8080"), !routes.isEmpty else {
    fatalError("GATEHOUSE_URL must be a URL and APP_BACKEND_ROUTES must name flows or assistant")
}
let app = try await buildAppBackend(
    AppBackendSettings(
        gatehouseURL: url, audience: audience, serviceKey: environment["GATEHOUSE_SERVICE_KEY"],
        databasePath: environment["APP_BACKEND_DATABASE"] ?? "app-backend.sqlite", routes: Set(routes),
        port: Int(environment["APP_BACKEND_PORT"] ?? "") ?? 8090, hookSecret: environment["APP_BACKEND_HOOK_SECRET"]))
try await app.runService()
