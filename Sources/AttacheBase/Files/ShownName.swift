/// A file name as it is printed in a tab-separated text line: a name may hold a newline, a tab
/// or other control characters, which would split or shift the line. Those (and the backslash)
/// are written as escapes (`\n`, `\t`, `\\`, `\x1b`); every other character as it is.
package func shown(_ name: String) -> String {
    guard name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F || $0 == "\\" }) else {
        return name
    }
    var text = ""
    for scalar in name.unicodeScalars {
        switch scalar {
        case "\\": text += "\\\\"
        case "\n": text += "\\n"
        case "\t": text += "\\t"
        case "\r": text += "\\r"
        case _ where scalar.value < 0x20 || scalar.value == 0x7F:
            let hex = String(scalar.value, radix: 16)
            text += "\\x" + (hex.count < 2 ? "0" : "") + hex
        default: text.unicodeScalars.append(scalar)
        }
    }
    return text
}
