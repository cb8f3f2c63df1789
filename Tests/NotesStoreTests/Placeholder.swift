// Placeholder so the package resolves until the store tests land (added on the server branch).
import Testing
