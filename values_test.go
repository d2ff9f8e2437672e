package voltro

// The typed constants users read in go doc (spelled as values, so go doc
// shows them) are the values the engine writes and reads.

import (
	"testing"

	"github.com/voltro/voltro/internal/inspect"
	"github.com/voltro/voltro/internal/schedule"
	"github.com/voltro/voltro/internal/store"
	"github.com/voltro/voltro/internal/workflow"
)

func TestTypedConstantsAreTheEngines(t *testing.T) {
	for got, want := range map[string]string{
		string(ParentCloseTerminate):     workflow.ParentCloseTerminate,
		string(ParentCloseRequestCancel): workflow.ParentCloseRequestCancel,
		string(ParentCloseAbandon):       workflow.ParentCloseAbandon,
		string(CoordinationSingle):       string(schedule.Single),
		string(CoordinationAdvisoryLock): string(schedule.AdvisoryLock),
		string(CoordinationCluster):      string(schedule.Cluster),
		string(OverlapSkip):              string(schedule.OverlapSkip),
		string(OverlapQueue):             string(schedule.OverlapQueue),
		string(OverlapParallel):          string(schedule.OverlapParallel),
		string(StatusRunning):            string(store.ExecRunning),
		string(StatusSuspended):          string(store.ExecSuspended),
		string(StatusCompleted):          string(store.ExecCompleted),
		string(StatusFailed):             string(store.ExecFailed),
		string(StatusCancelled):          string(store.ExecCancelled),
		string(ProblemDatabase):          inspect.ProblemDatabase,
		string(ProblemPool):              inspect.ProblemPool,
		string(ProblemLocks):             inspect.ProblemLocks,
		string(ProblemIdentity):          inspect.ProblemIdentity,
		string(ProblemReadLoop):          inspect.ProblemReadLoop,
		string(ProblemStalledShard):      inspect.ProblemStalledShard,
		string(ProblemUnacquired):        inspect.ProblemUnacquired,
		string(JournalStep):              string(store.JournalStep),
		string(JournalSleep):             string(store.JournalSleep),
		string(JournalSignal):            string(store.JournalSignal),
		string(JournalChild):             string(store.JournalChild),
		string(JournalPatch):             string(store.JournalPatch),
	} {
		if got != want {
			t.Errorf("constant %q, the engine's %q", got, want)
		}
	}
}
