package metrics

// An execution's error type is a Python exception class name, which code
// chooses, and may be anything (type("ada@example.org", (Exception,), {})):
// as a label it would publish it to every reader of /metrics, of any
// namespace, and add a series per name. The outcome label is therefore one
// of a fixed set: "ok", Python's built-in exceptions and warnings (3.10 to
// 3.13), codecell's own error types, and "other" for everything else.

// OutcomeOther is the outcome of an execution whose error type is not in
// the fixed set.
const OutcomeOther = "other"

var outcomes = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range []string{
		// codecell's (sandbox and servers package)
		"Timeout", "MemoryLimit", "OutputLimit", "ToolCallLimit", "Killed", "SandboxError", "ToolError",
		// Python's built-in exceptions
		"BaseException", "BaseExceptionGroup", "Exception", "ExceptionGroup", "ArithmeticError",
		"AssertionError", "AttributeError", "BlockingIOError", "BrokenPipeError", "BufferError",
		"ChildProcessError", "ConnectionAbortedError", "ConnectionError", "ConnectionRefusedError",
		"ConnectionResetError", "EOFError", "EnvironmentError", "FileExistsError", "FileNotFoundError",
		"FloatingPointError", "GeneratorExit", "IOError", "ImportError", "IndentationError", "IndexError",
		"InterruptedError", "IsADirectoryError", "KeyError", "KeyboardInterrupt", "LookupError",
		"MemoryError", "ModuleNotFoundError", "NameError", "NotADirectoryError", "NotImplementedError",
		"OSError", "OverflowError", "PermissionError", "ProcessLookupError", "PythonFinalizationError",
		"RecursionError", "ReferenceError", "RuntimeError", "StopAsyncIteration", "StopIteration",
		"SyntaxError", "SystemError", "SystemExit", "TabError", "TimeoutError", "TypeError",
		"UnboundLocalError", "UnicodeDecodeError", "UnicodeEncodeError", "UnicodeError",
		"UnicodeTranslateError", "ValueError", "ZeroDivisionError",
		// and warnings, which code can raise
		"Warning", "UserWarning", "DeprecationWarning", "PendingDeprecationWarning", "SyntaxWarning",
		"RuntimeWarning", "FutureWarning", "ImportWarning", "UnicodeWarning", "BytesWarning",
		"ResourceWarning", "EncodingWarning",
	} {
		m[n] = true
	}
	return m
}()

// Outcome is the label of an execution whose error type is errorType:
// OutcomeOK for "", the type itself when it is one of Python's built-in
// exceptions or codecell's own error types, else OutcomeOther.
func Outcome(errorType string) string {
	switch {
	case errorType == "":
		return OutcomeOK
	case outcomes[errorType]:
		return errorType
	}
	return OutcomeOther
}
