module github.com/codecell/codecell

go 1.26.8

require (
	github.com/elastic/go-seccomp-bpf v1.6.0 // indirect
	github.com/modelcontextprotocol/go-sdk v1.8.0 // indirect
	golang.org/x/net v0.41.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
