package service

import (
	"context"
	"sync"
)

// Service is a background service.
type Service interface {
	// Start starts the service; it returns once the service runs.
	Start(ctx context.Context) error
	// Stop ends the service and waits until it has returned. Stopping a
	// service never started returns at once.
	Stop()
}

// Loop is a Service that runs one function in its own goroutine, from
// Start until Stop cancels the function's context.
type Loop struct {
	run    func(ctx context.Context)
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// NewLoop is the loop that runs run.
func NewLoop(run func(ctx context.Context)) *Loop { return &Loop{run: run} }

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
		l.run(runCtx)
	}(l.done)
	return nil
}

// Stop cancels the function's context and waits for it to return; the
// loop can be started again.
func (l *Loop) Stop() {
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.cancel, l.done = nil, nil
	l.mu.Unlock()
	if done == nil {
		return
	}
	cancel()
	<-done
}

// StartAll starts services in order; when one fails it stops those it
// started and returns the error.
func StartAll(ctx context.Context, services ...Service) error {
	for i, s := range services {
		if err := s.Start(ctx); err != nil {
			StopAll(services[:i]...)
			return err
		}
	}
	return nil
}

// StopAll stops services at once and waits until every one has returned.
func StopAll(services ...Service) {
	var wg sync.WaitGroup
	for _, s := range services {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Stop()
		}()
	}
	wg.Wait()
}
