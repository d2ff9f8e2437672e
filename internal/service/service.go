package service

import (
	"context"
	"errors"
	"sync"
)

// Service is one part of an instance.
type Service interface {
	// Start starts the part; it returns once the part runs.
	Start(ctx context.Context) error
	// Stop ends the part and waits until it has, returning what went
	// wrong while it ran or stopped. Stopping a part never started
	// returns nil at once.
	Stop(ctx context.Context) error
}

// Loop is a Service that runs one function in its own goroutine, from
// Start until Stop cancels the function's context.
type Loop struct {
	run    func(ctx context.Context) error
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
	err    error // what run returned, read once done is closed
}

// NewLoop is the loop that runs run. What run returns, unless it is the
// cancellation Stop caused, is Stop's error.
func NewLoop(run func(ctx context.Context) error) *Loop { return &Loop{run: run} }

// Start runs the loop's function; a loop already running is left alone.
func (l *Loop) Start(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done != nil {
		return nil
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l.cancel, l.done = cancel, make(chan struct{})
	go func(done chan struct{}) {
		defer close(done)
		err := l.run(runCtx)
		if errors.Is(err, context.Canceled) && runCtx.Err() != nil {
			err = nil // the end Stop asked for
		}
		l.err = err
	}(l.done)
	return nil
}

// Stop cancels the function's context, waits for it to return and returns
// its error; the loop can be started again.
func (l *Loop) Stop(context.Context) error {
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.cancel, l.done = nil, nil
	l.mu.Unlock()
	if done == nil {
		return nil
	}
	cancel()
	<-done
	return l.err
}

// Funcs is a Service of two functions; a nil one does nothing. It suits a
// part whose start or stop is one call on something built beforehand (a
// listener closed, a lease released).
type Funcs struct {
	OnStart func(ctx context.Context) error
	OnStop  func(ctx context.Context) error
}

// Start calls OnStart.
func (f Funcs) Start(ctx context.Context) error {
	if f.OnStart == nil {
		return nil
	}
	return f.OnStart(ctx)
}

// Stop calls OnStop.
func (f Funcs) Stop(ctx context.Context) error {
	if f.OnStop == nil {
		return nil
	}
	return f.OnStop(ctx)
}

// Sequence starts its parts in order and stops the ones it started in
// reverse order. Its parts are fixed when it is built.
type Sequence struct {
	parts   []Service
	mu      sync.Mutex
	started int // parts[:started] have started
}

// NewSequence is the sequence of parts, nil ones left out.
func NewSequence(parts ...Service) *Sequence {
	s := &Sequence{}
	for _, p := range parts {
		if p != nil {
			s.parts = append(s.parts, p)
		}
	}
	return s
}

// Start starts the parts in order. When one fails, those started are
// stopped in reverse and the error returned (with theirs).
func (s *Sequence) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := s.started; i < len(s.parts); i++ {
		if err := s.parts[i].Start(ctx); err != nil {
			return errors.Join(err, s.stopLocked(ctx))
		}
		s.started = i + 1
	}
	return nil
}

// Stop stops the started parts in reverse order, each after the one
// started after it has returned, and returns their errors joined.
func (s *Sequence) Stop(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopLocked(ctx)
}

func (s *Sequence) stopLocked(ctx context.Context) error {
	started := s.parts[:s.started]
	s.started = 0
	return StopAll(ctx, started...)
}

// Started reports whether any part has started and not stopped since.
func (s *Sequence) Started() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started > 0
}

// Group starts its parts in order, as a Sequence does, but stops them at
// once and waits for all: for loops independent of each other.
type Group struct{ seq *Sequence }

// NewGroup is the group of parts, nil ones left out.
func NewGroup(parts ...Service) Group { return Group{NewSequence(parts...)} }

// Start starts the parts in order; see Sequence.Start.
func (g Group) Start(ctx context.Context) error { return g.seq.Start(ctx) }

// Stop stops the started parts at once and returns their errors joined.
func (g Group) Stop(ctx context.Context) error {
	s := g.seq
	s.mu.Lock()
	started := s.parts[:s.started]
	s.started = 0
	s.mu.Unlock()
	errs := make([]error, len(started))
	var wg sync.WaitGroup
	for i, p := range started {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = p.Stop(ctx)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// StopAll stops parts in reverse order, each after the one listed after it
// has returned, and returns their errors joined. For parts whose Stop is
// safe before their Start (they release what their constructor took).
func StopAll(ctx context.Context, parts ...Service) error {
	var errs []error
	for i := len(parts) - 1; i >= 0; i-- {
		errs = append(errs, parts[i].Stop(ctx))
	}
	return errors.Join(errs...)
}
