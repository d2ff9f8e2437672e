package errs

// The root package's voltro.Error is a mirror of Error, not an alias, so
// go doc shows its fields and methods: this file lets errors.As turn an
// Error into a voltro.Error, and lets Encode see through a voltro.Error.
// The root package imports this one, so Error cannot name the mirror's
// type: it finds it by its package path and name.

import "reflect"

// mirrorPkg and mirrorName name the mirror type (voltro.Error).
const (
	mirrorPkg  = "github.com/voltro/voltro"
	mirrorName = "Error"
)

// As lets errors.As(err, &e) with e a *voltro.Error find an Error: it sets
// e to a new voltro.Error with this one's code, message, causes and
// wrapped error. Every other target is left to errors.As.
func (e *Error) As(target any) bool {
	p := reflect.ValueOf(target)
	if p.Kind() != reflect.Pointer || p.IsNil() || p.Elem().Kind() != reflect.Pointer {
		return false
	}
	t := p.Elem().Type().Elem()
	if t.PkgPath() != mirrorPkg || t.Name() != mirrorName || t.Kind() != reflect.Struct {
		return false
	}
	m := reflect.New(t)
	s := m.Elem()
	s.FieldByName("Code").SetString(string(e.Code))
	s.FieldByName("Message").SetString(e.Message)
	if len(e.Causes) > 0 {
		f := s.FieldByName("Causes")
		cs := reflect.MakeSlice(f.Type(), len(e.Causes), len(e.Causes))
		for i, c := range e.Causes {
			cs.Index(i).FieldByName("Code").SetString(string(c.Code))
			cs.Index(i).FieldByName("Message").SetString(c.Message)
		}
		f.Set(cs)
	}
	if e.Err != nil {
		s.FieldByName("Err").Set(reflect.ValueOf(e.Err))
	}
	p.Elem().Set(m)
	return true
}

// mirrored is the Error a voltro.Error stands for (its As gives it), or nil
// if n is not a voltro.Error.
func mirrored(n error) *Error {
	t := reflect.TypeOf(n)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().PkgPath() != mirrorPkg || t.Elem().Name() != mirrorName {
		return nil
	}
	a, ok := n.(interface{ As(any) bool })
	var e *Error
	if !ok || !a.As(&e) {
		return nil
	}
	return e
}
