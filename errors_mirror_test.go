package voltro

// voltro.Error is a mirror of the engine's error type, not an alias: an
// error made on either side is found by errors.As and matched by
// errors.Is on the other, also after it was journaled.

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/voltro/voltro/internal/errs"
)

func TestEngineErrorsAreVoltroErrors(t *testing.T) {
	inner := errs.New(errs.CodeNotFound, "run %s: %w", "r1", io.EOF)
	err := fmt.Errorf("loading: %w", inner)
	var ve *Error
	if !errors.As(err, &ve) {
		t.Fatalf("errors.As(%v, *voltro.Error) is false", err)
	}
	if ve.Code != CodeNotFound || ve.Message != "run r1: EOF" || ve.Err != io.EOF {
		t.Fatalf("errors.As gave %+v", ve)
	}
	if ve.Error() != inner.Error() {
		t.Fatalf("text %q, the engine's %q", ve.Error(), inner.Error())
	}
	for _, target := range []error{ErrNotFound, io.EOF, &Error{Code: CodeNotFound, Message: "run r1: EOF"}} {
		if !errors.Is(err, target) || !errors.Is(ve, target) {
			t.Errorf("errors.Is(%v, %v) is false", err, target)
		}
	}
	if errors.Is(err, ErrFenced) || errors.Is(ve, &Error{Code: CodeNotFound, Message: "other"}) {
		t.Error("matched an error of another code or message")
	}
	var e *errs.Error
	if !errors.As(ve, &e) || e.Code != errs.CodeNotFound {
		t.Fatalf("errors.As(*voltro.Error, *errs.Error) gave %v", e)
	}
}

func TestVoltroErrorsKeepIdentityThroughTheJournal(t *testing.T) {
	errOutOfStock := NewError("out_of_stock", "out of stock")
	err := fmt.Errorf("sku 7: %w", errOutOfStock)
	if !errors.Is(err, errOutOfStock) || !errors.Is(errOutOfStock, errs.New("out_of_stock", "")) {
		t.Fatal("a NewError sentinel does not match itself in the process")
	}
	back := errs.Decode(errs.Encode(err))
	if back.Code != "out_of_stock" || back.Message != "out of stock" {
		t.Fatalf("encoded as %+v: the voltro.Error's code was lost", back)
	}
	for _, c := range back.Causes {
		if c.Code == "" && c.Message == errOutOfStock.Error() {
			t.Fatalf("the voltro.Error was kept as a plain cause of its own: %+v", back.Causes)
		}
	}
	if !errors.Is(back, errOutOfStock) {
		t.Fatalf("after the journal, errors.Is(%v, ErrOutOfStock) is false", back)
	}
	var ve *Error
	if !errors.As(back, &ve) || len(ve.Causes) == 0 || ve.Causes[0].Message != "sku 7: voltro out_of_stock: out of stock" {
		t.Fatalf("errors.As after the journal gave %+v", ve)
	}
	if !errors.Is(ve, errOutOfStock) {
		t.Fatal("the *voltro.Error read back does not match the sentinel")
	}
}
