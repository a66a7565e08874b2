package sandbox

import "errors"

// Ready reports whether the manager can take executions: nil until Close.
// It does not start a sandbox; that the isolation level works here was
// checked before the manager was made (Check), and a sandbox that fails to
// start fails its execution with a SandboxError.
func (m *Manager) Ready() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errors.New("sandbox manager is closed")
	}
	return nil
}
