package observe

// Telemetry is one instance's tracer and instruments. The engine, delivery
// and workflow code call it at the few points where work starts and ends;
// with the default no-op provider the spans cost next to nothing, and the
// Prometheus instruments live in a registry of the instance's own.

import (
	"context"
	"crypto/sha256"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/voltro/voltro/internal/store"
)

// HeaderTraceparent is the message header carrying the W3C trace context.
const HeaderTraceparent = "traceparent"

// InstrumentationName names voltro's tracer.
const InstrumentationName = "github.com/voltro/voltro"

// Telemetry holds an instance's tracer and Prometheus instruments.
type Telemetry struct {
	tracer  trace.Tracer
	tracing bool
	replica string
	reg     *prometheus.Registry

	wfStarted   *prometheus.CounterVec
	replays     *prometheus.CounterVec
	replayDur   *prometheus.HistogramVec
	wfFinished  *prometheus.CounterVec
	wfDur       *prometheus.HistogramVec
	steps       *prometheus.CounterVec
	stepDur     *prometheus.HistogramVec
	handlerDur  *prometheus.HistogramVec
	scheduleDur *prometheus.HistogramVec
	dequeued    *prometheus.CounterVec
	queueWait   *prometheus.HistogramVec
}

// New builds the telemetry of one instance. A nil tp traces nothing (the
// OpenTelemetry no-op provider; the global provider is never consulted).
func New(tp trace.TracerProvider, replica string) *Telemetry {
	t := &Telemetry{replica: replica, reg: prometheus.NewRegistry(), tracing: tp != nil}
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	if _, isNoop := tp.(noop.TracerProvider); isNoop {
		t.tracing = false
	}
	t.tracer = tp.Tracer(InstrumentationName)
	long := prometheus.ExponentialBucketsRange(0.005, 7*24*3600, 20)
	t.wfStarted = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "voltro_workflows_started_total",
		Help: "Workflow runs started through this instance (idempotent repeats not counted)."}, []string{"workflow"})
	t.replays = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "voltro_workflow_replays_total",
		Help: "Replays of workflow code on this instance, by how the replay ended (done, failed, cancelled, suspended, lost)."}, []string{"workflow", "outcome"})
	t.replayDur = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "voltro_workflow_replay_duration_seconds",
		Help: "Wall time of one replay of workflow code, steps included.", Buckets: prometheus.DefBuckets}, []string{"workflow"})
	t.wfFinished = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "voltro_workflows_finished_total",
		Help: "Workflow runs this instance brought to a final status."}, []string{"workflow", "status"})
	t.wfDur = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "voltro_workflow_duration_seconds",
		Help: "Time from a run's creation to its final status (sleeps and waits included).", Buckets: long}, []string{"workflow", "status"})
	t.steps = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "voltro_workflow_step_attempts_total",
		Help: "Attempts of workflow steps run on this instance, by result (ok, error)."}, []string{"workflow", "step", "result"})
	t.stepDur = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "voltro_workflow_step_duration_seconds",
		Help: "Wall time of one attempt of a workflow step.", Buckets: prometheus.DefBuckets}, []string{"workflow", "step", "result"})
	t.handlerDur = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "voltro_message_handler_duration_seconds",
		Help: "Wall time of one delivery attempt of a message to its entity handler, by result (ok, error).", Buckets: prometheus.DefBuckets}, []string{"entity_type", "result"})
	t.scheduleDur = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "voltro_schedule_run_duration_seconds",
		Help: "Wall time of a schedule's function fired on this instance, by result (ok, error).", Buckets: long}, []string{"schedule", "result"})
	t.dequeued = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "voltro_queue_dequeued_total",
		Help: "Queued runs this instance gave a slot (dequeued)."}, []string{"queue"})
	t.queueWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "voltro_queue_wait_seconds",
		Help: "Time a queued run waited for its slot, from its start (or its StartAt) to its dequeue, observed where it first runs.", Buckets: long}, []string{"queue"})
	t.reg.MustRegister(t.wfStarted, t.replays, t.replayDur, t.wfFinished, t.wfDur, t.steps, t.stepDur, t.handlerDur, t.scheduleDur, t.dequeued, t.queueWait)
	return t
}

// Registry is the instance's Prometheus registry.
func (t *Telemetry) Registry() *prometheus.Registry { return t.reg }

// Tracing reports whether a real TracerProvider was given.
func (t *Telemetry) Tracing() bool { return t.tracing }

// Tracer is voltro's tracer of this instance.
func (t *Telemetry) Tracer() trace.Tracer { return t.tracer }

// Traceparent is the W3C traceparent of the span in ctx, "" when none.
func Traceparent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c[HeaderTraceparent]
}

// ContextWithTraceparent makes tp (a W3C traceparent) the parent of the
// spans started from the returned context. A malformed tp leaves ctx as is.
func ContextWithTraceparent(ctx context.Context, tp string) context.Context {
	if tp == "" {
		return ctx
	}
	sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{HeaderTraceparent: tp}))
	if !sc.IsValid() {
		return ctx
	}
	return trace.ContextWithRemoteSpanContext(ctx, sc)
}

// TraceID is the trace id of a traceparent, "" when it has none.
func TraceID(tp string) string {
	sc := trace.SpanContextFromContext(ContextWithTraceparent(context.Background(), tp))
	if !sc.IsValid() {
		return ""
	}
	return sc.TraceID().String()
}

// ExecutionSpanContext is the stand-in parent of the replays of a run whose
// start recorded no trace (started by the CLI, or by an instance without a
// tracer): trace and span id derive from the execution id, so its replays
// still share one trace on every instance.
func ExecutionSpanContext(executionID string) trace.SpanContext {
	h := sha256.Sum256([]byte("voltro-execution\x00" + executionID))
	var tid trace.TraceID
	var sid trace.SpanID
	copy(tid[:], h[:16])
	copy(sid[:], h[16:24])
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
}

// InjectHeaders returns h with the traceparent of ctx's span added, unless
// h carries one already or ctx has no span. h itself is not modified.
func (t *Telemetry) InjectHeaders(ctx context.Context, h map[string]string) map[string]string {
	if _, ok := h[HeaderTraceparent]; ok || !trace.SpanContextFromContext(ctx).IsValid() {
		return h
	}
	out := make(map[string]string, len(h)+2)
	for k, v := range h {
		out[k] = v
	}
	propagation.TraceContext{}.Inject(ctx, propagation.MapCarrier(out))
	return out
}

func result(err error) string {
	if err != nil {
		return "error"
	}
	return "ok"
}

func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// endOnPanic ends a span whose code panicked, then panics on.
func endOnPanic(span trace.Span) {
	if r := recover(); r != nil {
		span.SetStatus(codes.Error, "panic")
		span.End()
		panic(r)
	}
}

// WrapHandler traces and times every delivery attempt of an entity type's
// messages. The span continues the trace named by the message's
// traceparent header, so a message joins the trace of whoever sent it, on
// whichever instance delivers it.
func (t *Telemetry) WrapHandler(entityType string, h func(context.Context, store.Message) ([]byte, error)) func(context.Context, store.Message) ([]byte, error) {
	return func(ctx context.Context, m store.Message) ([]byte, error) {
		if tp := m.Headers[HeaderTraceparent]; tp != "" {
			ctx = ContextWithTraceparent(ctx, tp)
		}
		ctx, span := t.tracer.Start(ctx, "message "+entityType, trace.WithSpanKind(trace.SpanKindConsumer),
			trace.WithAttributes(
				attribute.String("voltro.entity.type", entityType), attribute.String("voltro.entity.id", m.EntityID),
				attribute.Int64("voltro.message.id", m.ID), attribute.String("voltro.message.tag", m.Tag),
				attribute.Int("voltro.message.attempt", m.Attempts), attribute.String("voltro.shard", m.Shard),
				attribute.Int64("voltro.shard.epoch", m.ClaimEpoch), attribute.String("voltro.replica", t.replica)))
		defer endOnPanic(span)
		began := time.Now()
		out, err := h(ctx, m)
		t.handlerDur.WithLabelValues(entityType, result(err)).Observe(time.Since(began).Seconds())
		endSpan(span, err)
		return out, err
	}
}

// StartWorkflow opens the span of a workflow start. Its parent is the
// explicit traceparent tp when given, else the span in ctx. The returned
// context carries the span: its traceparent is what the run's start context
// keeps, so every replay of the run, on any instance, joins that trace. end
// reports whether a new run was created.
func (t *Telemetry) StartWorkflow(ctx context.Context, name, id, tp string) (context.Context, func(created bool, err error)) {
	ctx = ContextWithTraceparent(ctx, tp)
	ctx, span := t.tracer.Start(ctx, "workflow.start "+name, trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attribute.String("voltro.workflow", name), attribute.String("voltro.execution.id", id),
			attribute.String("voltro.replica", t.replica)))
	return ctx, func(created bool, err error) {
		if created {
			t.wfStarted.WithLabelValues(name).Inc()
		}
		span.SetAttributes(attribute.Bool("voltro.workflow.created", created))
		endSpan(span, err)
	}
}

// StartContexts reads a run's start context (store.Workflows has it).
type StartContexts interface {
	GetStartContext(ctx context.Context, id string) (store.StartContext, error)
}

// StartReplay opens the span of one replay of run x woken by message m.
// The parent is the trace kept in the run's start context, so the replays
// of one run share its trace on every instance; the span links to the
// delivery of the message that woke it. end takes the replay's outcome
// (done, failed, cancelled, suspended, lost) and its error.
func (t *Telemetry) StartReplay(ctx context.Context, sc StartContexts, x store.Execution, m store.Message, journaled int) (context.Context, func(outcome string, err error)) {
	opts := []trace.SpanStartOption{trace.WithAttributes(
		attribute.String("voltro.workflow", x.Name), attribute.String("voltro.execution.id", x.ID),
		attribute.String("voltro.message.tag", m.Tag), attribute.Int64("voltro.message.id", m.ID),
		attribute.Int("voltro.workflow.journaled", journaled), attribute.String("voltro.replica", t.replica))}
	parent := ctx
	if t.tracing {
		if woke := trace.SpanContextFromContext(ctx); woke.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: woke}))
		}
		// under the run's own trace, not under the message: the one its
		// start recorded, else one derived from the execution id
		run := ExecutionSpanContext(x.ID)
		if s, err := sc.GetStartContext(ctx, x.ID); err == nil {
			if rec := trace.SpanContextFromContext(ContextWithTraceparent(context.Background(), s.Trace)); rec.IsValid() {
				run = rec
			}
		}
		parent = trace.ContextWithRemoteSpanContext(ctx, run)
	}
	ctx, span := t.tracer.Start(parent, "workflow "+x.Name, opts...)
	began := time.Now()
	return ctx, func(outcome string, err error) {
		t.replays.WithLabelValues(x.Name, outcome).Inc()
		t.replayDur.WithLabelValues(x.Name).Observe(time.Since(began).Seconds())
		span.SetAttributes(attribute.String("voltro.workflow.outcome", outcome))
		endSpan(span, err)
	}
}

// WorkflowFinished counts a run this instance brought to a final status,
// age being the time since the run was created.
func (t *Telemetry) WorkflowFinished(name, status string, age time.Duration) {
	t.wfFinished.WithLabelValues(name, status).Inc()
	if age > 0 {
		t.wfDur.WithLabelValues(name, status).Observe(age.Seconds())
	}
}

// QueueDequeued counts n runs of queue given a slot here.
func (t *Telemetry) QueueDequeued(queue string, n int) {
	t.dequeued.WithLabelValues(queue).Add(float64(n))
}

// QueueWaited observes how long a run of queue waited for its slot.
func (t *Telemetry) QueueWaited(queue string, d time.Duration) {
	t.queueWait.WithLabelValues(queue).Observe(max(d, 0).Seconds())
}

// StartStep opens the span of one attempt of a step; end takes its error.
func (t *Telemetry) StartStep(ctx context.Context, workflow, id, step string, seq, attempt int) (context.Context, func(err error)) {
	ctx, span := t.tracer.Start(ctx, "step "+step, trace.WithAttributes(
		attribute.String("voltro.workflow", workflow), attribute.String("voltro.execution.id", id),
		attribute.String("voltro.step", step), attribute.Int("voltro.step.seq", seq),
		attribute.Int("voltro.step.attempt", attempt), attribute.String("voltro.replica", t.replica)))
	began := time.Now()
	return ctx, func(err error) {
		r := result(err)
		t.steps.WithLabelValues(workflow, step, r).Inc()
		t.stepDur.WithLabelValues(workflow, step, r).Observe(time.Since(began).Seconds())
		endSpan(span, err)
	}
}

// WrapSchedule traces and times every firing of a schedule's function on
// this instance.
func (t *Telemetry) WrapSchedule(name string, fn func(context.Context, time.Time) error) func(context.Context, time.Time) error {
	if fn == nil {
		return nil
	}
	return func(ctx context.Context, at time.Time) error {
		ctx, span := t.tracer.Start(ctx, "schedule "+name, trace.WithAttributes(
			attribute.String("voltro.schedule", name), attribute.String("voltro.schedule.scheduled_at", at.UTC().Format(time.RFC3339Nano)),
			attribute.Float64("voltro.schedule.late_seconds", time.Since(at).Seconds()),
			attribute.String("voltro.replica", t.replica)))
		defer endOnPanic(span)
		began := time.Now()
		err := fn(ctx, at)
		t.scheduleDur.WithLabelValues(name, result(err)).Observe(time.Since(began).Seconds())
		endSpan(span, err)
		return err
	}
}
