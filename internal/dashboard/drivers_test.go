// The databases the tests open by URL.

package dashboard_test

import _ "github.com/voltro/voltro/internal/alldrivers" // the benchmark opens a SQL store by URL
