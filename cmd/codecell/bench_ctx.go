package main

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// contextEfficiency is filled in by the context-efficiency scenarios.
func contextEfficiency(ctx context.Context, cs *mcp.ClientSession) ([]benchFigure, error) {
	return nil, errors.New("not measured in this build")
}
