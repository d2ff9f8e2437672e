package errs

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
)

func TestHTTPStatus(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{New(CodeNotFound, "no run"), http.StatusNotFound},
		{fmt.Errorf("cancelling: %w", New(CodeInvalidArgument, "bad")), http.StatusBadRequest},
		{Wrap(CodeUnavailable, errors.New("down"), "store"), http.StatusServiceUnavailable},
		{New(CodeHandler, "boom"), http.StatusInternalServerError},
		{errors.New("plain"), http.StatusInternalServerError},
	} {
		if got := HTTPStatus(c.err); got != c.want {
			t.Errorf("%v: %d, want %d", c.err, got, c.want)
		}
	}
}
