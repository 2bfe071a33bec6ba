/// The error of a test that needs a tool this machine does not have (`bsdtar`, `pixz`, ...).
///
/// Thrown by ``ChildProcess`` when it cannot find the executable, so that a missing tool reads as
/// such ("pixz is not installed") instead of as a launch failure with an errno. Tests that can do
/// without a tool should rather skip, visibly: `.enabled(if: ChildProcess.lookUp("pixz") != nil)`.
package struct ToolMissing: Error, CustomStringConvertible {
    /// The name (or path) that was asked for.
    package var name: String

    package init(name: String) { self.name = name }

    package var description: String { "\(name) is not installed" }
}
