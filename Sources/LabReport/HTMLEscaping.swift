extension String {
    /// This text made safe inside HTML and SVG, in elements and in quoted
    /// attributes: `&`, `<`, `>`, `"` and `'` become character references.
    ///
    /// ```swift
    /// "<script>".htmlEscaped   // "&lt;script&gt;"
    /// ```
    public var htmlEscaped: String {
        var escaped = ""
        escaped.reserveCapacity(utf8.count)
        for character in unicodeScalars {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped
    }
}
