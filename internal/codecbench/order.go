// Package codecbench holds a ~20-field nested result type and a wrapper
// generated for it, to measure the generated result codec against
// encoding/json (bench_test.go; docs/BENCHMARKS.md).
package codecbench

import (
	"context"
	"time"
)

// Address is nested twice.
type Address struct {
	Street, City, Zip, Country string
}

// Customer is nested once.
type Customer struct {
	ID      string
	Name    string
	Email   string
	Address Address
}

// Line is one order line.
type Line struct {
	SKU   string
	Qty   int32
	Price float64
	Tags  map[string]string
}

// Order is the stored result: about 20 fields, nested.
type Order struct {
	ID        string
	Customer  Customer
	Lines     []Line
	Total     int64
	Currency  string
	Paid      bool
	CreatedAt time.Time
	Notes     *string
	Meta      map[string]string
	Discounts []int64
	Status    string
	Ref       []byte
	Weight    float64
	Items     int
}

// Place places an order.
//
//idem:ttl=24h
func Place(ctx context.Context, id string) (*Order, error) { return Sample(id), nil }

// Sample is a typical order.
func Sample(id string) *Order {
	note := "leave at the door"
	return &Order{
		ID:       id,
		Customer: Customer{ID: "cus_1", Name: "Ada Lovelace", Email: "ada@example.com", Address: Address{"1 Main St", "London", "N1", "GB"}},
		Lines: []Line{
			{SKU: "sku-1", Qty: 2, Price: 9.99, Tags: map[string]string{"color": "red"}},
			{SKU: "sku-2", Qty: 1, Price: 24.5, Tags: map[string]string{"size": "L", "fit": "slim"}},
			{SKU: "sku-3", Qty: 5, Price: 1.25},
		},
		Total: 5073, Currency: "EUR", Paid: true,
		CreatedAt: time.Date(2026, 11, 23, 20, 0, 0, 0, time.UTC),
		Notes:     &note,
		Meta:      map[string]string{"channel": "web", "campaign": "autumn"},
		Discounts: []int64{100, 250},
		Status:    "placed",
		Ref:       []byte("ref-0001"),
		Weight:    3.75,
		Items:     8,
	}
}
