import Foundation

// What the configuration loader reads beside its own settings: the OpenTelemetry variables, a
// configuration file's shape, and an I/O error's reason (split from ConfigLoader.swift).
extension GatehouseConfig {
    /// The OpenTelemetry SDK's own variables, read from the environment only: traces are on when
    /// an OTLP endpoint is set (and neither `OTEL_SDK_DISABLED=true` nor `OTEL_TRACES_EXPORTER=none`
    /// turns them off). Only OTLP over HTTP (protobuf or JSON) is built in; anything else is refused
    /// here rather than at the first export.
    static func readTraces(_ environment: [String: String], into config: inout GatehouseConfig) -> [String] {
        func value(_ name: String) -> String? {
            environment[name].map { $0.trimmingCharacters(in: .whitespaces) }.flatMap { $0.isEmpty ? nil : $0 }
        }
        if let name = value("OTEL_SERVICE_NAME") { config.tracesServiceName = name }
        let endpoint: String
        if let traces = value("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            endpoint = traces
        } else if let base = value("OTEL_EXPORTER_OTLP_ENDPOINT") {
            endpoint = base + (base.hasSuffix("/") ? "" : "/") + "v1/traces"
        } else {
            return []
        }
        if value("OTEL_SDK_DISABLED")?.lowercased() == "true" { return [] }
        var problems: [String] = []
        switch value("OTEL_TRACES_EXPORTER")?.lowercased() {
        case nil, "otlp": break
        case "none": return []
        case let other?: problems.append("OTEL_TRACES_EXPORTER: '\(other)' is not supported (otlp or none)")
        }
        for name in ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"] {
            if let wire = value(name), !["http/protobuf", "http/json"].contains(wire.lowercased()) {
                problems.append("\(name): '\(wire)' is not supported (http/protobuf or http/json)")
            }
        }
        guard let url = URL(string: endpoint), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host != nil else {
            problems.append("OTEL_EXPORTER_OTLP_ENDPOINT: '\(GatehouseConfig.redactURL(endpoint))' is not an http:// or https:// URL")
            return problems
        }
        if problems.isEmpty { config.tracesEndpoint = endpoint }
        return problems
    }

    /// Unknown keys in the config file are refused, so a misspelling cannot go unnoticed.
    static func checkConfigFile(_ data: Data, path: String) -> [String] {
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            return ["GATEHOUSE_CONFIG_FILE: \(path) is not a JSON object"]
        }
        var problems: [String] = []
        for key in object.keys where key != "gatehouse" {
            problems.append("GATEHOUSE_CONFIG_FILE: unknown top-level key '\(key)' in \(path) (settings go under 'gatehouse')")
        }
        if let settings = object["gatehouse"] as? [String: Any] {
            let known = Set(knownKeys)
            for key in settings.keys.sorted() where !known.contains(key) {
                problems.append("GATEHOUSE_CONFIG_FILE: unknown key 'gatehouse.\(key)' in \(path)")
            }
        } else if object["gatehouse"] != nil {
            problems.append("GATEHOUSE_CONFIG_FILE: 'gatehouse' in \(path) must be an object")
        }
        return problems
    }

    static func reason(_ error: any Error) -> String {
        if let error = error as? CocoaError, let underlying = error.userInfo[NSUnderlyingErrorKey] as? NSError {
            return underlying.localizedDescription
        }
        return (error as NSError).localizedDescription
    }
}
