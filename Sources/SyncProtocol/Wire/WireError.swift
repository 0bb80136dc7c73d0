/// Why bytes from a peer were refused. Any of these closes the connection.
public enum WireError: Error, Equatable, Sendable, CustomStringConvertible {
    case emptyFrame
    case frameTooLarge(Int, limit: Int)
    case unknownFrameType(UInt8)
    case unknownMessageType(UInt8)
    /// A message body ended before a field it announced.
    case truncated(String)
    /// A field has a value the protocol does not allow.
    case malformed(String)

    public var description: String {
        switch self {
        case .emptyFrame: "malformed frame: length 0"
        case .frameTooLarge(let length, let limit): "frame of \(length) bytes exceeds the limit of \(limit)"
        case .unknownFrameType(let type): "unknown frame type \(type)"
        case .unknownMessageType(let type): "unknown message type \(type)"
        case .truncated(let field): "truncated message: \(field) missing"
        case .malformed(let detail): "malformed message: \(detail)"
        }
    }
}
