import Foundation

/// Server-rendered SVG charts for the console's overview: drawn with presentation attributes
/// only (no `style`), so they need nothing the page's CSP does not allow.
enum ConsoleCharts {
    /// A bar per value, labelled every few bars; `title` is the chart's accessible name.
    static func bars(title: String, labels: [String], values: [Int], color: String) -> String {
        let width = 600.0, height = 160.0, top = 16.0, bottom = 22.0, left = 34.0
        let plot = height - top - bottom
        let maximum = max(values.max() ?? 0, 1)
        let step = (width - left) / Double(max(values.count, 1))
        let barWidth = max(step * 0.7, 1)
        var svg = """
            <svg class="chart" viewBox="0 0 \(Int(width)) \(Int(height))" role="img" aria-label="\(escape(title))" \
            xmlns="http://www.w3.org/2000/svg"><title>\(escape(title))</title>
            """
        // Axis: the top value and zero.
        svg += line(x1: left, y1: top, x2: width, y2: top, dashed: true)
        svg += line(x1: left, y1: top + plot, x2: width, y2: top + plot, dashed: false)
        svg += text(x: left - 6, y: top + 4, anchor: "end", String(maximum))
        svg += text(x: left - 6, y: top + plot + 4, anchor: "end", "0")
        let every = max(1, values.count / 6)
        for (index, value) in values.enumerated() {
            let barHeight = plot * Double(value) / Double(maximum)
            let x = left + Double(index) * step + (step - barWidth) / 2
            let label = index < labels.count ? labels[index] : ""
            svg += """
                <rect x="\(format(x))" y="\(format(top + plot - barHeight))" width="\(format(barWidth))" \
                height="\(format(barHeight))" fill="\(escape(color))" rx="1"><title>\(escape(label)): \(value)</title></rect>
                """
            if index == values.count - 1 {
                svg += text(x: x + barWidth, y: height - 6, anchor: "end", label)
            } else if index % every == 0, index < values.count - every / 2 - 1 {
                svg += text(x: x + barWidth / 2, y: height - 6, anchor: "middle", label)
            }
        }
        return svg + "</svg>"
    }

    /// Horizontal bars for shares of a whole (the plan mix).
    static func shares(title: String, parts: [(label: String, count: Int)], color: String) -> String {
        let width = 600.0, row = 30.0, labelWidth = 90.0
        let height = max(row * Double(parts.count), row)
        let total = max(parts.reduce(0) { $0 + $1.count }, 1)
        let maximum = max(parts.map(\.count).max() ?? 0, 1)
        var svg = """
            <svg class="chart" viewBox="0 0 \(Int(width)) \(Int(height))" role="img" aria-label="\(escape(title))" \
            xmlns="http://www.w3.org/2000/svg"><title>\(escape(title))</title>
            """
        for (index, part) in parts.enumerated() {
            let y = Double(index) * row
            let barWidth = (width - labelWidth - 90) * Double(part.count) / Double(maximum)
            let percent = Int((Double(part.count) * 100 / Double(total)).rounded())
            svg += text(x: 0, y: y + 19, anchor: "start", part.label, size: 14)
            svg += """
                <rect x="\(format(labelWidth))" y="\(format(y + 6))" width="\(format(max(barWidth, 1)))" height="18" \
                fill="\(escape(color))" rx="2"/>
                """
            svg += text(x: labelWidth + max(barWidth, 1) + 8, y: y + 19, anchor: "start", "\(part.count) (\(percent) %)", size: 14)
        }
        return svg + "</svg>"
    }

    private static func line(x1: Double, y1: Double, x2: Double, y2: Double, dashed: Bool) -> String {
        """
        <line x1="\(format(x1))" y1="\(format(y1))" x2="\(format(x2))" y2="\(format(y2))" stroke="currentColor" \
        stroke-opacity="0.25"\(dashed ? " stroke-dasharray=\"4 4\"" : "")/>
        """
    }

    private static func text(x: Double, y: Double, anchor: String, _ content: String, size: Int = 11) -> String {
        """
        <text x="\(format(x))" y="\(format(y))" text-anchor="\(anchor)" font-size="\(size)" fill="currentColor">\(escape(content))</text>
        """
    }

    private static func format(_ value: Double) -> String { String(format: "%.1f", value) }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
