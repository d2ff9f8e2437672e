package errs

// An error keeps its identity through Encode and Decode, as it does when a
// step's error is journaled, a child's result read by its parent, or a run
// replayed in another process.

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
)

var (
	errOutOfStock = errors.New("out of stock")                             // a plain sentinel
	errDeclined   = New(Code("payment_declined"), "the card was declined") // a coded sentinel
)

// travel is what a journal or the wire does to an error: bytes, then back.
func travel(t *testing.T, err error) error {
	t.Helper()
	b := Encode(err)
	var raw map[string]any
	if json.Unmarshal(b, &raw) != nil {
		t.Fatalf("not JSON: %s", b)
	}
	return Decode(b)
}

func TestEncodeKeepsIdentity(t *testing.T) {
	cases := []struct {
		name   string
		err    error
		is     []error
		isNot  []error
		code   Code
		travel int // how many times it crosses
	}{
		{name: "plain sentinel", err: errOutOfStock, is: []error{errOutOfStock, ErrHandler}, isNot: []error{errDeclined, ErrNotFound}, code: CodeHandler, travel: 1},
		{name: "wrapped plain sentinel", err: fmt.Errorf("sku 7: %w", errOutOfStock), is: []error{errOutOfStock}, code: CodeHandler, travel: 2},
		{name: "coded sentinel", err: errDeclined, is: []error{errDeclined, &Error{Code: "payment_declined"}}, isNot: []error{New(Code("payment_declined"), "other"), ErrHandler}, code: "payment_declined", travel: 2},
		{name: "wrapped coded sentinel", err: fmt.Errorf("card 42: %w", errDeclined), is: []error{errDeclined}, code: "payment_declined", travel: 3},
		{name: "coded wrapping plain", err: New(CodeInvalidArgument, "order: %w", errOutOfStock), is: []error{errOutOfStock, ErrInvalidArgument}, code: CodeInvalidArgument, travel: 2},
		{name: "joined", err: errors.Join(errOutOfStock, fmt.Errorf("also: %w", errDeclined)), is: []error{errOutOfStock, errDeclined}, code: "payment_declined", travel: 2},
		{name: "plain unrelated", err: errors.New("out of stock at the warehouse"), isNot: []error{errOutOfStock}, code: CodeHandler, travel: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.err
			for range c.travel {
				err = travel(t, err)
			}
			for _, target := range c.is {
				if !errors.Is(err, target) {
					t.Errorf("errors.Is(%v, %v) = false after %d crossing(s)", err, target, c.travel)
				}
			}
			for _, target := range c.isNot {
				if errors.Is(err, target) {
					t.Errorf("errors.Is(%v, %v) = true", err, target)
				}
			}
			var e *Error
			if !errors.As(err, &e) || e.Code != c.code {
				t.Errorf("code %v, want %s", e, c.code)
			}
		})
	}
}
