// The databases the tests open by URL.

package status_test

import _ "github.com/voltro/voltro/internal/alldrivers" // the tests open SQL stores by URL
