import Foundation
import GatehouseWire

/// A short description of a device from its `User-Agent`, for the "new sign-in" notice
/// (finding 16). It is built only from a fixed vocabulary (platform and browser names), never
/// from the header's own text, so a forged header cannot put words of its own into mail.
public enum DeviceSummary {
    /// E.g. "Safari on iPhone", "Chrome on Windows", "An app on iPad", "An unknown device".
    public static func describe(userAgent: String?) -> String {
        guard let agent = userAgent?.prefix(512), !agent.isEmpty else { return "An unknown device" }
        let platform = Self.platform(String(agent))
        let software = Self.software(String(agent))
        switch (software, platform) {
        case (nil, nil): return "An unknown device"
        case (let software?, nil): return software
        case (nil, let platform?): return "A device running \(platform)"
        case (let software?, let platform?): return "\(software) on \(platform)"
        }
    }

    private static func platform(_ agent: String) -> String? {
        let rules: [(String, String)] = [
            ("iPhone", "iPhone"), ("iPad", "iPad"), ("iPod", "iPod"), ("Android", "Android"), ("Windows", "Windows"),
            ("CrOS", "ChromeOS"), ("Macintosh", "Mac"), ("Mac OS X", "Mac"), ("Linux", "Linux"), ("Darwin", "an Apple device"),
        ]
        return rules.first { agent.contains($0.0) }?.1
    }

    private static func software(_ agent: String) -> String? {
        if agent.contains("Edg/") { return "Edge" }
        if agent.contains("Firefox/") || agent.contains("FxiOS/") { return "Firefox" }
        if agent.contains("Chrome/") || agent.contains("CriOS/") { return "Chrome" }
        if agent.contains("Safari/") && agent.contains("Version/") { return "Safari" }
        if agent.contains("CFNetwork/") || agent.contains("okhttp/") || agent.contains("Dalvik/") { return "An app" }
        return nil
    }
}
