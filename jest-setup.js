// Extends the create-plugin style base in .config/.
import './.config/jest-setup';
