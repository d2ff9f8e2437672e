package errs

// The HTTP status of an error, for the inspect server's routes that act
// (the admin routes, the dashboard's actions and reads).

import (
	"errors"
	"net/http"
)

// HTTPStatus is the status an HTTP route answers err with, by its code:
// 404 not found, 400 invalid argument, 503 unavailable, 500 otherwise
// (an error without a voltro code included).
func HTTPStatus(err error) int {
	var e *Error
	if errors.As(err, &e) {
		switch e.Code {
		case CodeNotFound:
			return http.StatusNotFound
		case CodeInvalidArgument:
			return http.StatusBadRequest
		case CodeUnavailable:
			return http.StatusServiceUnavailable
		}
	}
	return http.StatusInternalServerError
}
