// Package basic is the README example: a free function keyed on two fields.
package basic

import (
	"context"
	"sync/atomic"
	"time"
)

// executions counts real runs of CreateInvoice.
var executions atomic.Int64

type InvoiceRequest struct {
	CustomerID string
	OrderID    string
	Amount     int64
	Note       string
	Due        time.Time
	Lines      []Line
	Meta       map[string]string
	Hook       func() `idem:"-"`
}

type Line struct {
	SKU   string
	Qty   int
	Price *float64
}

type Invoice struct {
	ID     string
	Amount int64
}

// CreateInvoice charges the card and emails the receipt.
//
//idem:ttl=24h lease=30s on_duplicate=wait key=req.CustomerID,req.OrderID
func CreateInvoice(ctx context.Context, req InvoiceRequest) (*Invoice, error) {
	executions.Add(1)
	time.Sleep(5 * time.Millisecond) // long enough for a storm to pile up
	return &Invoice{ID: req.CustomerID + "/" + req.OrderID, Amount: req.Amount}, nil
}
